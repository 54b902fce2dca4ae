// Legacy asks as 2026 inputRequests: the key (hint, else a content digest), the 2026 shape, and
// the answer-shape check that guards what goes upstream [conformance.md "Input keys"].

import t from 'tap';
import { askKey, INPUT_KEY_META, toAsk, validAnswer } from '../../src/mrtr/asks.js';
import type { JsonObject, JsonRpcRequest } from '../../src/jsonrpc.js';

const elicit = (params: JsonObject, id: string | number = 1): JsonRpcRequest => ({
  jsonrpc: '2.0',
  id,
  method: 'elicitation/create',
  params,
});
const form = (message: string): JsonObject => ({
  message,
  requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
});

t.test('INPUT_KEY_META is the documented convention', async (t) => {
  t.equal(INPUT_KEY_META, 'causeway/inputKey');
});

t.test('askKey uses the hint', async (t) => {
  t.equal(askKey(elicit({ ...form('What?'), _meta: { [INPUT_KEY_META]: 'user_name' } })), 'user_name');
  t.equal(
    askKey({ jsonrpc: '2.0', id: 9, method: 'roots/list', params: { _meta: { [INPUT_KEY_META]: 'client_roots' } } }),
    'client_roots',
  );
  const derived = askKey(elicit(form('What?')));
  t.equal(askKey(elicit({ ...form('What?'), _meta: { [INPUT_KEY_META]: '' } })), derived, 'empty hint: derived key');
  t.equal(
    askKey(elicit({ ...form('What?'), _meta: { [INPUT_KEY_META]: 42 } })),
    derived,
    'non-string hint: derived key',
  );
});

t.test('askKey without a hint: a stable digest of method and content', async (t) => {
  const a = askKey(elicit(form('What is your name?'), 1));
  t.match(a, /^elicitation-[A-Za-z0-9_-]{12}$/);
  t.equal(askKey(elicit(form('What is your name?'), 77)), a, 'the upstream id does not matter');
  t.equal(
    askKey(
      elicit({
        requestedSchema: { required: ['name'], properties: { name: { type: 'string' } }, type: 'object' },
        message: 'What is your name?',
      }),
    ),
    a,
    'key order does not matter',
  );
  t.equal(
    askKey(elicit({ ...form('What is your name?'), _meta: { other: 1 } })),
    askKey(elicit({ ...form('What is your name?'), _meta: { other: 1 } })),
  );
  t.not(askKey(elicit(form('What is your quest?'))), a, 'a different question: a different key');
  t.not(askKey(elicit({ ...form('What is your name?'), _meta: { other: 1 } })), a, 'other _meta is content');
  const url = (id: string): JsonObject => ({
    mode: 'url',
    message: 'Sign in',
    url: 'https://example.com/login',
    elicitationId: id,
  });
  t.equal(askKey(elicit(url('e-1'))), askKey(elicit(url('e-2'))), 'url elicitationId is not part of the key');
  const sample: JsonRpcRequest = {
    jsonrpc: '2.0',
    id: 3,
    method: 'sampling/createMessage',
    params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10 },
  };
  t.match(askKey(sample), /^sampling-/);
  t.match(askKey({ jsonrpc: '2.0', id: 4, method: 'roots/list' }), /^roots-/, 'no params at all');
  t.equal(
    askKey({ jsonrpc: '2.0', id: 4, method: 'roots/list' }),
    askKey({ jsonrpc: '2.0', id: 5, method: 'roots/list', params: {} }),
  );
  // Same content under two methods must not collide.
  t.not(
    askKey({ jsonrpc: '2.0', id: 1, method: 'roots/list', params: {} }).slice(6),
    askKey({ jsonrpc: '2.0', id: 1, method: 'elicitation/create', params: {} }).slice(12),
    'the method is part of the digest',
  );
});

t.test('toAsk: 2026 shape, hint stripped, url elicitationId stripped', async (t) => {
  const r = elicit({ ...form('What?'), _meta: { [INPUT_KEY_META]: 'user_name' } }, 'up-1');
  const before = JSON.stringify(r);
  const ask = toAsk(r, new Set());
  t.equal(ask.key, 'user_name');
  t.equal(ask.upstreamId, 'up-1');
  t.same(ask.input, { method: 'elicitation/create', params: form('What?') });
  t.notOk('_meta' in (ask.input.params as JsonObject), 'an emptied _meta is removed');
  t.equal(JSON.stringify(r), before, 'the upstream request is not mutated');

  const kept = toAsk(elicit({ ...form('What?'), _meta: { [INPUT_KEY_META]: 'k', 'x/y': 1 } }), new Set());
  t.same((kept.input.params as JsonObject)._meta, { 'x/y': 1 }, 'other _meta keys stay');

  const url = toAsk(
    elicit({ mode: 'url', message: 'Sign in', url: 'https://example.com/a', elicitationId: 'e-9' }),
    new Set(),
  );
  t.same(
    url.input.params,
    { mode: 'url', message: 'Sign in', url: 'https://example.com/a' },
    'elicitationId removed [CHG minor 11]',
  );

  const notElicit = toAsk(
    {
      jsonrpc: '2.0',
      id: 2,
      method: 'sampling/createMessage',
      params: { messages: [], maxTokens: 1, elicitationId: 'keep' },
    },
    new Set(),
  );
  t.equal((notElicit.input.params as JsonObject).elicitationId, 'keep', 'only elicitation loses elicitationId');

  const roots = toAsk({ jsonrpc: '2.0', id: 3, method: 'roots/list' }, new Set());
  t.same(roots.input, { method: 'roots/list', params: {} });
});

t.test('toAsk: a taken key gets a suffix', async (t) => {
  const r = elicit({ ...form('Q'), _meta: { [INPUT_KEY_META]: 'dup' } });
  t.equal(toAsk(r, new Set(['dup'])).key, 'dup-2');
  t.equal(toAsk(r, new Set(['dup', 'dup-2'])).key, 'dup-3');
  const derived = askKey(elicit(form('Q')));
  t.equal(toAsk(elicit(form('Q')), new Set([derived])).key, `${derived}-2`);
});

t.test('validAnswer: elicitation', async (t) => {
  const m = 'elicitation/create';
  t.ok(validAnswer(m, { action: 'accept', content: { name: 'Ada' } }));
  t.ok(validAnswer(m, { action: 'accept' }), 'url-mode accept has no content');
  t.ok(validAnswer(m, { action: 'decline' }));
  t.ok(validAnswer(m, { action: 'cancel' }));
  t.notOk(validAnswer(m, { action: 'maybe' }));
  t.notOk(validAnswer(m, { content: { name: 'Ada' } }), 'no action');
  t.notOk(validAnswer(m, { action: 'accept', content: 'Ada' }), 'content not an object');
  t.notOk(validAnswer(m, { action: 'accept', content: ['Ada'] }), 'content an array');
  t.notOk(validAnswer(m, { action: 'accept', content: null }), 'content null');
  t.notOk(validAnswer(m, 12345));
  t.notOk(validAnswer(m, 'accept'));
  t.notOk(validAnswer(m, null));
  t.notOk(validAnswer(m, undefined));
  t.notOk(validAnswer(m, [{ action: 'accept' }]));
});

t.test('validAnswer: sampling', async (t) => {
  const m = 'sampling/createMessage';
  t.ok(
    validAnswer(m, { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'm', stopReason: 'endTurn' }),
  );
  t.ok(validAnswer(m, { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'm' }));
  t.notOk(validAnswer(m, { role: 'assistant', content: { type: 'text', text: 'Paris' } }), 'no model');
  t.notOk(validAnswer(m, { content: { type: 'text', text: 'Paris' }, model: 'm' }), 'no role');
  t.notOk(validAnswer(m, { role: 'assistant', content: 'Paris', model: 'm' }), 'content a string');
  t.notOk(validAnswer(m, { role: 'assistant', model: 'm' }), 'no content');
  t.notOk(validAnswer(m, { role: 1, content: {}, model: 'm' }));
  t.notOk(validAnswer(m, { action: 'accept' }), 'an elicitation answer');
});

t.test('validAnswer: roots', async (t) => {
  const m = 'roots/list';
  t.ok(validAnswer(m, { roots: [] }));
  t.ok(validAnswer(m, { roots: [{ uri: 'file:///a' }, { uri: 'file:///b', name: 'b' }] }));
  t.notOk(validAnswer(m, { roots: [{ name: 'no uri' }] }));
  t.notOk(validAnswer(m, { roots: [{ uri: 1 }] }));
  t.notOk(validAnswer(m, { roots: ['file:///a'] }));
  t.notOk(validAnswer(m, { roots: {} }));
  t.notOk(validAnswer(m, {}));
});

t.test('validAnswer: anything for an unknown method is refused', async (t) => {
  t.notOk(validAnswer('ping', {}));
  t.notOk(validAnswer('tools/call', { content: [] }));
});
