// A modern request's params as the legacy call gets them (legacyParams): the 2026-only members and
// `_meta` keys left out, the call's own progress token in place of the client's, nothing else
// changed, a `__proto__` member kept as the member JSON.parse made it.

import t from 'tap';
import { legacyParams } from '../../src/upstream/http/index.js';

t.test('2026-only params and _meta keys are left out; the rest goes as it is', async (t) => {
  const params = JSON.parse(
    '{"name":"echo","arguments":{"text":"hi"},"inputResponses":{},"requestState":"s",' +
      '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' +
      '"progressToken":"client","x.example/trace":"k"}}',
  );
  t.same(legacyParams(params, undefined), {
    name: 'echo',
    arguments: { text: 'hi' },
    _meta: { 'x.example/trace': 'k' },
  });
  t.same(
    legacyParams(params, 'up-1')._meta,
    { 'x.example/trace': 'k', progressToken: 'up-1' },
    "the call's own token, not the client's",
  );
});

t.test('no _meta when nothing is left for it', async (t) => {
  const params = JSON.parse('{"name":"echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}');
  t.same(legacyParams(params, undefined), { name: 'echo' });
  t.notOk('_meta' in legacyParams(params, undefined));
  t.same(legacyParams({ name: 'echo' }, 'up-2'), { name: 'echo', _meta: { progressToken: 'up-2' } });
});

t.test('a __proto__ member stays a member, and sets no prototype', async (t) => {
  const params = JSON.parse('{"name":"echo","arguments":{},"__proto__":{"polluted":true}}');
  const out = legacyParams(params, undefined);
  t.equal(Object.getPrototypeOf(out), Object.prototype);
  t.equal((out as { polluted?: unknown }).polluted, undefined);
  t.same(
    JSON.parse(JSON.stringify(out)),
    JSON.parse('{"name":"echo","arguments":{},"__proto__":{"polluted":true}}'),
    'sent upstream as the client sent it',
  );
});
