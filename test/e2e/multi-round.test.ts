// The multi-round bridge end to end [MRTR]: the real 2026-07-28 client (@modelcontextprotocol/client
// 2.4.0, pinned, autoFulfill on) and hand-built requests, through Causeway, to the legacy fixture
// whose tools make real server->client elicitation / sampling / roots requests.

import t from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { callTool, ELICIT, nameAnswer, textOf, type Json } from '../mrtr/wire.js';
import { until } from '../helpers/until.js';

const upstream = await startLegacyServer();
// A wider collect window than the default 20 ms, so concurrent asks stay in one round on a busy CI host.
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'mrtr.collectWindowMs': 50 });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

type Caps = ConstructorParameters<typeof Client>[1] extends infer O
  ? O extends { capabilities?: infer C }
    ? C
    : never
  : never;

interface Seen {
  elicit: Json[];
  sample: Json[];
  roots: number;
  /** Bodies of the tools/call / prompts/get POSTs the client sent. */
  posts: Json[];
}

async function modernClient(
  capabilities: Caps,
  answers: { elicit?: (params: Json) => Json; sample?: (params: Json) => Json; roots?: () => Json } = {},
): Promise<{ client: Client; seen: Seen }> {
  const seen: Seen = { elicit: [], sample: [], roots: 0, posts: [] };
  const client = new Client(
    { name: 'mrtr-e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities },
  );
  if (answers.elicit) {
    const f = answers.elicit;
    client.setRequestHandler('elicitation/create', async (req) => {
      seen.elicit.push(req.params);
      return f(req.params);
    });
  }
  if (answers.sample) {
    const f = answers.sample;
    client.setRequestHandler('sampling/createMessage', async (req) => {
      seen.sample.push(req.params);
      return f(req.params);
    });
  }
  if (answers.roots) {
    const f = answers.roots;
    client.setRequestHandler('roots/list', async () => {
      seen.roots++;
      return f();
    });
  }
  const counting: typeof fetch = async (input, init) => {
    if (typeof init?.body === 'string') {
      try {
        const b = JSON.parse(init.body) as Json;
        if (b?.method === 'tools/call' || b?.method === 'prompts/get') seen.posts.push(b);
      } catch {
        /* not JSON */
      }
    }
    return fetch(input, init);
  };
  await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url), { fetch: counting }));
  t.teardown(() => client.close());
  return { client, seen };
}

const ALL: Caps = { elicitation: { form: {} }, sampling: {}, roots: {} };
const accept = (name: string) => () => ({ action: 'accept' as const, content: { name } });
const assistant = (text: string) => () => ({
  role: 'assistant' as const,
  content: { type: 'text' as const, text },
  model: 'test-model',
  stopReason: 'endTurn',
});

t.test('modern_client-to-legacy_upstream-mrtr-elicitation: completes with the handler answer', async (t) => {
  const { client, seen } = await modernClient(ALL, { elicit: accept('Ada') });
  const r = await client.callTool({ name: ELICIT, arguments: {} });
  t.same(r.content, [{ type: 'text', text: 'Hello, Ada!' }]);
  t.equal(seen.elicit.length, 1);
  t.equal(seen.elicit[0].message, 'What is your name?');
  t.notOk(JSON.stringify(seen.elicit[0]).includes('causeway/inputKey'), 'the key hint never reaches the client');
  t.equal(seen.posts.length, 2, 'one input_required round, one retry');
  t.ok(seen.posts[1].params.requestState, 'the retry echoes requestState');
  t.same(Object.keys(seen.posts[1].params.inputResponses), ['user_name']);
});

t.test('modern_client-to-legacy_upstream-mrtr-sampling', async (t) => {
  const { client, seen } = await modernClient(ALL, { sample: assistant('Paris') });
  const r = await client.callTool({ name: 'test_input_required_result_sampling', arguments: {} });
  t.same(r.content, [{ type: 'text', text: 'Sampling result: Paris' }]);
  t.equal(seen.sample.length, 1);
  t.equal(seen.sample[0].maxTokens, 100);
  t.same(seen.sample[0].messages, [
    { role: 'user', content: { type: 'text', text: 'What is the capital of France?' } },
  ]);
});

t.test('modern_client-to-legacy_upstream-mrtr-roots', async (t) => {
  const { client, seen } = await modernClient(ALL, {
    roots: () => ({ roots: [{ uri: 'file:///a', name: 'a' }, { uri: 'file:///b' }] }),
  });
  const r = await client.callTool({ name: 'test_input_required_result_list_roots', arguments: {} });
  t.same(r.content, [{ type: 'text', text: 'Found 2 root(s)' }]);
  t.equal(seen.roots, 1);
});

t.test('modern_client-to-legacy_upstream-mrtr-multi_round: two sequential rounds', async (t) => {
  const { client, seen } = await modernClient(ALL, {
    elicit: (p) =>
      String(p.message).startsWith('Step 1')
        ? { action: 'accept', content: { name: 'Ada' } }
        : { action: 'accept', content: { color: 'blue' } },
  });
  const r = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
  t.same(r.content, [{ type: 'text', text: 'Multi-round complete for Ada who likes blue' }]);
  t.equal(seen.elicit.length, 2, 'the handler was called twice');
  t.same(
    seen.elicit.map((p) => p.message),
    ['Step 1: What is your name?', 'Step 2: What is your favorite color?'],
  );
  t.equal(seen.posts.length, 3, 'two input_required rounds, then the complete result');
  t.same(Object.keys(seen.posts[1].params.inputResponses), ['step1']);
  t.same(Object.keys(seen.posts[2].params.inputResponses), ['step2']);
});

t.test('modern_client-to-legacy_upstream-mrtr-ask_twice: two sequential asks without key hints', async (t) => {
  const { client, seen } = await modernClient(ALL, {
    elicit: (p) =>
      String(p.message).startsWith('First')
        ? { action: 'accept', content: { name: 'Ada' } }
        : { action: 'accept', content: { quest: 'grail' } },
  });
  const r = await client.callTool({ name: 'ask_twice', arguments: {} });
  t.same(r.content, [{ type: 'text', text: 'name=Ada; quest=grail' }]);
  t.equal(seen.elicit.length, 2);
  t.equal(seen.posts.length, 3);
});

t.test('modern_client-to-legacy_upstream-mrtr-ask_concurrent: concurrent asks arrive in one round', async (t) => {
  const { client, seen } = await modernClient(ALL, {
    elicit: accept('Ada'),
    roots: () => ({ roots: [{ uri: 'file:///r' }] }),
  });
  const r = await client.callTool({ name: 'ask_concurrent', arguments: {} });
  t.same(r.content, [{ type: 'text', text: 'name=Ada; roots=1' }]);
  t.equal(seen.elicit.length, 1);
  t.equal(seen.roots, 1);
  t.equal(seen.posts.length, 2, 'both asks in the first round');
  t.equal(Object.keys(seen.posts[1].params.inputResponses).length, 2);
});

t.test('modern_client-to-legacy_upstream-mrtr-multiple_inputs: three concurrent asks in one round', async (t) => {
  const { client, seen } = await modernClient(ALL, {
    elicit: accept('Ada'),
    sample: assistant('Good day'),
    roots: () => ({ roots: [{ uri: 'file:///x' }, { uri: 'file:///y' }, { uri: 'file:///z' }] }),
  });
  const r = await client.callTool({ name: 'test_input_required_result_multiple_inputs', arguments: {} });
  t.same(r.content, [{ type: 'text', text: 'Name: Ada; Greeting: Good day; Roots: 3' }]);
  t.same([seen.elicit.length, seen.sample.length, seen.roots], [1, 1, 1]);
  t.equal(seen.posts.length, 2, 'all three asks in the first round');
  t.same(Object.keys(seen.posts[1].params.inputResponses).sort(), ['client_roots', 'greeting', 'user_name']);
});

t.test('modern_client-to-legacy_upstream-mrtr-prompts_get', async (t) => {
  const { client, seen } = await modernClient(ALL, {
    elicit: () => ({ action: 'accept', content: { context: 'tests' } }),
  });
  const r = await client.getPrompt({ name: 'test_input_required_result_prompt' });
  t.same(r.messages, [{ role: 'user', content: { type: 'text', text: 'Prompt with context: tests' } }]);
  t.equal(seen.elicit.length, 1);
});

// ---- The wire, by hand ----

const url = causeway.url;

t.test(
  'raw_client-to-legacy_upstream-mrtr-round1: input_required with the hinted key, hint stripped, sealed state',
  async (t) => {
    const r = await callTool(url, ELICIT);
    t.equal(r.status, 200);
    t.match(r.contentType, /^application\/json/);
    const result = r.body.result;
    t.equal(result.resultType, 'input_required');
    t.same(Object.keys(result.inputRequests), ['user_name']);
    t.same(result.inputRequests.user_name, {
      method: 'elicitation/create',
      params: {
        message: 'What is your name?',
        requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      },
    });
    t.notOk(JSON.stringify(r.body).includes('causeway/inputKey'), 'no key hint anywhere in the reply');
    t.type(result.requestState, 'string');
    t.ok(result.requestState.length > 40);
    t.notOk(
      'ttlMs' in result || 'cacheScope' in result || 'content' in result,
      'no cache fields or content on input_required',
    );

    const done = await callTool(url, ELICIT, {
      inputResponses: { user_name: nameAnswer('Ada') },
      requestState: result.requestState,
    });
    t.equal(done.status, 200);
    t.equal(done.body.result.resultType, 'complete');
    t.equal(textOf(done), 'Hello, Ada!');
  },
);

t.test('raw_client-to-legacy_upstream-mrtr-up_front: answers given up front complete in one request', async (t) => {
  const before = upstream.stats();
  const r = await callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Grace') } });
  t.equal(r.body.result?.resultType, 'complete');
  t.equal(textOf(r), 'Hello, Grace!');
  const after = upstream.stats();
  t.equal((after.toolCalls[ELICIT] ?? 0) - (before.toolCalls[ELICIT] ?? 0), 1, 'one upstream call');
  t.equal(after.responsesReceived - before.responsesReceived, 1, 'the ask answered once upstream');
});

t.test('raw_client-to-legacy_upstream-mrtr-missing_answer: the same question again, a new state', async (t) => {
  const r1 = await callTool(url, ELICIT);
  const s1 = r1.body.result.requestState;
  const before = upstream.stats().responsesReceived;
  const r2 = await callTool(url, ELICIT, { inputResponses: {}, requestState: s1 });
  t.equal(r2.body.result?.resultType, 'input_required');
  t.same(Object.keys(r2.body.result.inputRequests), ['user_name'], 'same key');
  t.same(r2.body.result.inputRequests.user_name, r1.body.result.inputRequests.user_name, 'same question');
  const s2 = r2.body.result.requestState;
  t.type(s2, 'string');
  t.not(s2, s1, 'a new requestState');
  const r3 = await callTool(url, ELICIT, { requestState: s2 });
  t.equal(r3.body.result?.resultType, 'input_required', 'no inputResponses at all: asked again');
  t.equal(upstream.stats().responsesReceived, before, 'nothing went upstream');
  const done = await callTool(url, ELICIT, {
    inputResponses: { user_name: nameAnswer('Ada') },
    requestState: r3.body.result.requestState,
  });
  t.equal(textOf(done), 'Hello, Ada!');
});

t.test('raw_client-to-legacy_upstream-mrtr-bad_answer: not passed upstream, the question comes back', async (t) => {
  const r1 = await callTool(url, ELICIT);
  let state = r1.body.result.requestState;
  const before = upstream.stats().responsesReceived;
  for (const bad of [
    12345,
    'Ada',
    [nameAnswer('Ada')],
    { action: 'maybe' },
    { action: 'accept', content: 'Ada' },
    { content: { name: 'Ada' } },
  ]) {
    const r = await callTool(url, ELICIT, { inputResponses: { user_name: bad }, requestState: state });
    t.equal(r.body.result?.resultType, 'input_required', `${JSON.stringify(bad)}: asked again`);
    t.same(Object.keys(r.body.result?.inputRequests ?? {}), ['user_name']);
    state = r.body.result.requestState;
  }
  t.equal(upstream.stats().responsesReceived, before, 'no ill-formed answer reached the upstream');
  const done = await callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state });
  t.equal(textOf(done), 'Hello, Ada!');
});

t.test(
  'raw_client-to-legacy_upstream-mrtr-bad_fields: inputResponses null / array, requestState not a string -> -32602',
  async (t) => {
    for (const extra of [
      { inputResponses: null },
      { inputResponses: [nameAnswer('Ada')] },
      { inputResponses: 'user_name' },
      { requestState: 42 },
      { requestState: null },
    ]) {
      const r = await callTool(url, ELICIT, extra);
      t.equal(r.body.error?.code, -32602, `${JSON.stringify(extra)}: -32602`);
      t.equal(r.status, 400);
    }
    // On a retry too, and the held call survives the bad retry.
    const r1 = await callTool(url, ELICIT);
    const state = r1.body.result.requestState;
    const bad = await callTool(url, ELICIT, { inputResponses: null, requestState: state });
    t.equal(bad.body.error?.code, -32602);
    const done = await callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state });
    t.equal(textOf(done), 'Hello, Ada!', 'the same state still works after a refused retry');
  },
);

t.test('raw_client-to-legacy_upstream-mrtr-extra_keys: unknown inputResponses keys are ignored', async (t) => {
  const up = await callTool(url, ELICIT, {
    inputResponses: { user_name: nameAnswer('Ada'), bogus: { x: 1 }, other: 5, nul: null },
  });
  t.equal(textOf(up), 'Hello, Ada!', 'up front');
  const r1 = await callTool(url, ELICIT);
  const done = await callTool(url, ELICIT, {
    inputResponses: {
      user_name: nameAnswer('Bob'),
      step1: nameAnswer('x'),
      'elicitation-AAAAAAAAAAAA': { action: 'decline' },
    },
    requestState: r1.body.result.requestState,
  });
  t.equal(textOf(done), 'Hello, Bob!', 'on a retry');
});

t.test('raw_client-to-legacy_upstream-mrtr-decline: a well-formed non-accept answer is relayed', async (t) => {
  const r = await callTool(url, ELICIT, { inputResponses: { user_name: { action: 'decline' } } });
  t.equal(r.body.result?.resultType, 'complete');
  t.equal(r.body.result?.isError, true);
  t.match(textOf(r), /No name provided \(action=decline\)/);
});

t.test(
  'raw_client-to-legacy_upstream-mrtr-ask_concurrent: unhinted concurrent asks in one round, stable keys',
  async (t) => {
    const r1 = await callTool(url, 'ask_concurrent');
    const reqs = r1.body.result?.inputRequests ?? {};
    const keys = Object.keys(reqs).sort();
    t.equal(keys.length, 2, 'both asks in round 1');
    const elicitKey = keys.find((k) => reqs[k].method === 'elicitation/create');
    const rootsKey = keys.find((k) => reqs[k].method === 'roots/list');
    t.match(elicitKey, /^elicitation-[A-Za-z0-9_-]{12}$/);
    t.match(rootsKey, /^roots-[A-Za-z0-9_-]{12}$/);
    t.same(reqs[rootsKey!], { method: 'roots/list', params: {} });
    // The derived key is stable: the same question on another call has the same key.
    const again = await callTool(url, 'ask_concurrent');
    t.same(Object.keys(again.body.result.inputRequests).sort(), keys, 'same asks, same keys');
    const done = await callTool(url, 'ask_concurrent', {
      inputResponses: {
        [elicitKey!]: nameAnswer('Ada'),
        [rootsKey!]: { roots: [{ uri: 'file:///a' }, { uri: 'file:///b' }] },
      },
      requestState: r1.body.result.requestState,
    });
    t.equal(textOf(done), 'name=Ada; roots=2');
    // Partial answer on the other call: the answered one goes upstream, the other is asked again.
    const partial = await callTool(url, 'ask_concurrent', {
      inputResponses: { [rootsKey!]: { roots: [] } },
      requestState: again.body.result.requestState,
    });
    t.same(Object.keys(partial.body.result?.inputRequests ?? {}), [elicitKey], 'only the unanswered ask remains');
    const done2 = await callTool(url, 'ask_concurrent', {
      inputResponses: { [elicitKey!]: nameAnswer('Bo') },
      requestState: partial.body.result.requestState,
    });
    t.equal(textOf(done2), 'name=Bo; roots=0');
  },
);

t.test('raw_client-to-legacy_upstream-mrtr-multiple_inputs: three hinted asks in one round', async (t) => {
  const name = 'test_input_required_result_multiple_inputs';
  const r1 = await callTool(url, name);
  const reqs = r1.body.result?.inputRequests ?? {};
  t.same(Object.keys(reqs).sort(), ['client_roots', 'greeting', 'user_name']);
  t.equal(reqs.greeting.method, 'sampling/createMessage');
  t.same(reqs.greeting.params, {
    messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
    maxTokens: 50,
  });
  t.same(reqs.client_roots, { method: 'roots/list', params: {} });
  const done = await callTool(url, name, {
    inputResponses: {
      user_name: nameAnswer('Ada'),
      greeting: { role: 'assistant', content: { type: 'text', text: 'Hi' }, model: 'm' },
      client_roots: { roots: [{ uri: 'file:///a' }] },
    },
    requestState: r1.body.result.requestState,
  });
  t.equal(textOf(done), 'Name: Ada; Greeting: Hi; Roots: 1');
});

t.test('raw_client-to-legacy_upstream-mrtr-multi_round: sequential rounds by hand', async (t) => {
  const name = 'test_input_required_result_multi_round';
  const r1 = await callTool(url, name);
  t.same(Object.keys(r1.body.result.inputRequests), ['step1']);
  const r2 = await callTool(url, name, {
    inputResponses: { step1: nameAnswer('Ada') },
    requestState: r1.body.result.requestState,
  });
  t.equal(r2.body.result?.resultType, 'input_required');
  t.same(Object.keys(r2.body.result.inputRequests), ['step2']);
  const stale = await callTool(url, name, {
    inputResponses: { step1: nameAnswer('Ada') },
    requestState: r1.body.result.requestState,
  });
  t.equal(stale.body.error?.code, -32602, 'the round-1 state cannot be used again');
  const done = await callTool(url, name, {
    inputResponses: { step2: { action: 'accept', content: { color: 'red' } } },
    requestState: r2.body.result.requestState,
  });
  t.equal(textOf(done), 'Multi-round complete for Ada who likes red');
  // Both answers up front: one request, no rounds.
  const upFront = await callTool(url, name, {
    inputResponses: { step1: nameAnswer('Bo'), step2: { action: 'accept', content: { color: 'green' } } },
  });
  t.equal(textOf(upFront), 'Multi-round complete for Bo who likes green');
});

// ---- Capabilities [MRTR "capabilities"] ----

t.test(
  'raw_client-to-legacy_upstream-mrtr-capability: {} and ' +
    'test_missing_capability -> 400 / -32021, requiredCapabilities.sampling',
  async (t) => {
    const before = upstream.stats();
    const r = await callTool(url, 'test_missing_capability', {}, { caps: {} });
    t.equal(r.status, 400);
    t.equal(r.body.error?.code, -32021);
    t.type(r.body.error?.data?.requiredCapabilities?.sampling, 'object');
    t.notOk(r.body.result, 'no input_required for an undeclared capability');
    // The ask was refused upstream (-32601) or the call cancelled: either way it does not stay open.
    t.ok(
      await until(
        () => {
          const s = upstream.stats();
          return s.responsesReceived > before.responsesReceived || s.cancelled > before.cancelled;
        },
        { what: 'the upstream call to end' },
      ),
      'the upstream call does not stay open',
    );
  },
);

t.test('raw_client-to-legacy_upstream-mrtr-capability: {elicitation:{}} and the sampling tool -> -32021', async (t) => {
  const r = await callTool(url, 'test_input_required_result_sampling', {}, { caps: { elicitation: {} } });
  t.equal(r.status, 400);
  t.equal(r.body.error?.code, -32021);
  t.type(r.body.error?.data?.requiredCapabilities?.sampling, 'object');
});

t.test(
  'raw_client-to-legacy_upstream-mrtr-capability: {sampling:{}} ' +
    'and the elicitation tool -> -32021 naming elicitation',
  async (t) => {
    const r = await callTool(url, ELICIT, {}, { caps: { sampling: {} } });
    t.equal(r.status, 400);
    t.equal(r.body.error?.code, -32021);
    t.type(r.body.error?.data?.requiredCapabilities?.elicitation, 'object');
  },
);

t.test('modern_client-to-legacy_upstream-mrtr-capability: the SDK surfaces -32021', async (t) => {
  const { client } = await modernClient({});
  await t.rejects(client.callTool({ name: 'test_missing_capability', arguments: {} }), { code: -32021 });
});
