// The one bounded map every memo, replay cache and catalog keeps its entries in: at most `max`
// entries, the oldest forgotten first, `use` making an entry the newest (least recently used
// forgotten first); and OnceEach, which says a thing once until it is forgotten.

import t from 'tap';
import { BoundedMap, OnceEach } from '../src/bounded.js';

t.test('past its bound the oldest entry is forgotten', async (t) => {
  const m = new BoundedMap<string, number>(3);
  for (const [i, k] of ['a', 'b', 'c', 'd'].entries()) m.set(k, i);
  t.same([...m.keys()], ['b', 'c', 'd']);
  m.set('c', 10);
  t.same(
    [...m.entries()],
    [
      ['b', 1],
      ['c', 10],
      ['d', 3],
    ],
    'setting a key it holds forgets nothing',
  );
  t.equal(m.size, 3);
});

t.test('use makes an entry the newest', async (t) => {
  const m = new BoundedMap<string, number>(2);
  m.set('a', 1).set('b', 2);
  t.equal(m.use('a'), 1);
  m.set('c', 3);
  t.same([...m.keys()], ['a', 'c'], 'b, the least recently used, went first');
  t.equal(m.use('zz'), undefined, 'an absent key is not added');
  t.equal(m.size, 2);
});

t.test('OnceEach: true the first time, again once forgotten', async (t) => {
  const once = new OnceEach(2);
  t.ok(once.first('x'));
  t.notOk(once.first('x'));
  t.ok(once.first('y'));
  t.ok(once.first('z'), 'x is forgotten now');
  t.ok(once.first('x'));
});
