// The duplicate-key check every test's Causeway logs go through.

import t from 'tap';
import { duplicateKeys } from './strict-json.js';

t.test('finds a key named twice in one object, at any depth, and nothing else', async (t) => {
  t.same(duplicateKeys('{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}'), [], 'the same key in different objects is fine');
  t.same(duplicateKeys('{"a":1,"b":"x","a":2}'), ['a']);
  t.same(duplicateKeys('{"o":{"k":"v\\"","k":1}}'), ['k'], 'inside a nested object, after an escaped quote');
  t.same(duplicateKeys('{"s":"{\\"a\\":1,\\"a\\":2}"}'), [], 'JSON text inside a string is a string');
  t.same(duplicateKeys('[{"a":[1,{"b":2}],"a":0}]'), ['a']);
});
