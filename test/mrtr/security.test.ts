// requestState is attacker-controlled [MRTR "requestState integrity"]: tampered, expired, replayed,
// re-targeted, cross-principal and foreign-key states are refused with -32602 before anything
// reaches the upstream; a state sealed under a shared key completes on another replica.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { callTool, ELICIT, flipChar, nameAnswer, rpc, sleep, stateKey, textOf, type Reply } from './wire.js';
import { until } from '../helpers/until.js';

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});
const url = causeway.url;

async function round1(u = url, opts = {}): Promise<string> {
  const r = await callTool(u, ELICIT, {}, opts);
  if (r.body.result?.resultType !== 'input_required') throw new Error(`round 1 was ${JSON.stringify(r.body)}`);
  return r.body.result.requestState as string;
}

/** A subtest (the parameter of the last t.test overload). */
type Asserts = Parameters<Parameters<typeof t.test>[0]>[0];

function refused(t: Asserts, r: Reply, why: string): void {
  t.equal(r.body.error?.code, -32602, `${why}: -32602`);
  t.equal(r.status, 400, `${why}: HTTP 400`);
  t.notOk(r.body.result, `${why}: no result`);
}

/**
 * Lets any stray upstream answer land before the counters are compared. Only ever before a
 * negative check (nothing reached the upstream): a slow machine can make it miss a stray answer,
 * never fail a correct run.
 */
const settle = () => sleep(60);

t.test('a tampered requestState is refused and nothing is answered upstream', async (t) => {
  const state = await round1();
  const before = upstream.stats();
  for (const at of [0, 5, Math.floor(state.length / 2), state.length - 5]) {
    refused(
      t,
      await callTool(url, ELICIT, {
        inputResponses: { user_name: nameAnswer('Mallory') },
        requestState: flipChar(state, at),
      }),
      `char ${at} flipped`,
    );
  }
  refused(
    t,
    await callTool(url, ELICIT, {
      inputResponses: { user_name: nameAnswer('Mallory') },
      requestState: state.slice(0, -3),
    }),
    'truncated',
  );
  refused(
    t,
    await callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Mallory') }, requestState: '' }),
    'empty',
  );
  refused(
    t,
    await callTool(url, ELICIT, {
      inputResponses: { user_name: nameAnswer('Mallory') },
      requestState: 'not*base64url',
    }),
    'not base64url',
  );
  await settle(); // negative check
  const after = upstream.stats();
  t.equal(after.responsesReceived, before.responsesReceived, 'the fixture received no answer');
  t.equal(after.toolCalls[ELICIT], before.toolCalls[ELICIT], 'no new upstream call either');
  const done = await callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state });
  t.equal(textOf(done), 'Hello, Ada!', 'the genuine state still completes the held call');
});

t.test('a replayed state is refused', async (t) => {
  const state = await round1();
  const done = await callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state });
  t.equal(textOf(done), 'Hello, Ada!');
  const before = upstream.stats();
  refused(
    t,
    await callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state }),
    'replay after completion',
  );
  refused(
    t,
    await callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Eve') }, requestState: state }),
    'replay with other answers',
  );
  refused(t, await callTool(url, ELICIT, { requestState: state }), 'replay without answers');
  await settle(); // negative check
  const after = upstream.stats();
  t.equal(after.toolCalls[ELICIT], before.toolCalls[ELICIT], 'the call was not started again');
  t.equal(after.responsesReceived, before.responsesReceived);
});

t.test('two retries with one state at once: one completes, the other is refused', async (t) => {
  const state = await round1();
  // Whichever arrives first makes the call busy until it completes; the other is a replay.
  const [a, b] = await Promise.all([
    callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state }),
    callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Eve') }, requestState: state }),
  ]);
  const texts = [textOf(a), textOf(b)];
  const codes = [a.body.error?.code, b.body.error?.code];
  t.equal(texts.filter((x) => x !== undefined).length, 1, `exactly one completed: ${JSON.stringify(texts)}`);
  t.equal(codes.filter((c) => c === -32602).length, 1, 'the other is -32602');
  t.ok(['Hello, Ada!', 'Hello, Eve!'].includes(texts.find((x) => x !== undefined) ?? ''), 'with its own answer');
});

t.test('a state used with other params or another method is refused', async (t) => {
  const state = await round1();
  const before = upstream.stats();
  refused(
    t,
    await callTool(url, ELICIT, {
      arguments: { extra: 'x' },
      inputResponses: { user_name: nameAnswer('Ada') },
      requestState: state,
    }),
    'other arguments',
  );
  refused(
    t,
    await callTool(url, 'test_input_required_result_tampered_state', {
      inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
      requestState: state,
    }),
    'another tool',
  );
  refused(
    t,
    await rpc(url, 'prompts/get', {
      name: ELICIT,
      inputResponses: { user_name: nameAnswer('Ada') },
      requestState: state,
    }),
    'another method',
  );
  await settle(); // negative check
  t.equal(upstream.stats().responsesReceived, before.responsesReceived, 'nothing answered upstream');
  const done = await callTool(url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state });
  t.equal(textOf(done), 'Hello, Ada!', 'still good for its own request');
});

t.test('an expired state is refused', async (t) => {
  const short = await startCauseway({ 'upstream.url': upstream.url, 'mrtr.stateTtlMs': 250, 'log.level': 'warn' });
  t.teardown(() => short.close());
  const state = await round1(short.url);
  await sleep(400); // lower bound: past stateTtlMs, read off the clock when the state is opened
  const before = upstream.stats();
  refused(
    t,
    await callTool(short.url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state }),
    'expired',
  );
  await settle(); // negative check
  t.equal(upstream.stats().responsesReceived, before.responsesReceived);
  t.equal(upstream.stats().toolCalls[ELICIT], before.toolCalls[ELICIT], 'not replayed either');
});

t.test("another principal's state is refused", async (t) => {
  const multi = await startCauseway({
    'upstream.url': upstream.url,
    'principal.mode': 'header',
    'principal.hashSecret': 'a-test-secret-of-32-characters!!',
    'log.level': 'warn',
  });
  t.teardown(() => multi.close());
  const alice = { headers: { 'x-causeway-principal': 'alice' } };
  const bob = { headers: { 'x-causeway-principal': 'bob' } };
  const state = await round1(multi.url, alice);
  const before = upstream.stats();
  refused(
    t,
    await callTool(multi.url, ELICIT, { inputResponses: { user_name: nameAnswer('Bob') }, requestState: state }, bob),
    'bob',
  );
  refused(
    t,
    await callTool(multi.url, ELICIT, { inputResponses: { user_name: nameAnswer('Anon') }, requestState: state }),
    'no principal header',
  );
  refused(
    t,
    await callTool(
      multi.url,
      ELICIT,
      { inputResponses: { user_name: nameAnswer('Al') }, requestState: state },
      { headers: { 'x-causeway-principal': 'Alice' } },
    ),
    'Alice (case differs)',
  );
  await settle(); // negative check
  t.equal(upstream.stats().responsesReceived, before.responsesReceived, 'nothing answered upstream');
  const done = await callTool(
    multi.url,
    ELICIT,
    { inputResponses: { user_name: nameAnswer('Alice') }, requestState: state },
    alice,
  );
  t.equal(textOf(done), 'Hello, Alice!', 'alice completes her own call');
});

t.test('a state from an instance with other keys is refused', async (t) => {
  const a = await startCauseway({ 'upstream.url': upstream.url, 'mrtr.stateKeys': stateKey(), 'log.level': 'warn' });
  const b = await startCauseway({ 'upstream.url': upstream.url, 'mrtr.stateKeys': stateKey(), 'log.level': 'warn' });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const state = await round1(a.url);
  const before = upstream.stats();
  refused(
    t,
    await callTool(b.url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state }),
    'foreign key',
  );
  await settle(); // negative check
  t.equal(upstream.stats().toolCalls[ELICIT], before.toolCalls[ELICIT], 'no upstream call from B');
  const unkeyed = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
  t.teardown(() => unkeyed.close());
  refused(
    t,
    await callTool(unkeyed.url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state }),
    'random per-process key',
  );
});

t.test(
  'with the same keys, a retry sent to another instance completes (holder lost: replay with answers)',
  async (t) => {
    const k1 = stateKey();
    const k2 = stateKey();
    const a = await startCauseway({ 'upstream.url': upstream.url, 'mrtr.stateKeys': k1, 'log.level': 'warn' });
    // B has rotated: k2 is newest, k1 still opens.
    const b = await startCauseway({
      'upstream.url': upstream.url,
      'mrtr.stateKeys': `${k2},${k1}`,
      'log.level': 'warn',
    });
    t.teardown(() => Promise.all([a.close(), b.close()]));

    const state = await round1(a.url);
    const before = upstream.stats();
    const done = await callTool(b.url, ELICIT, {
      inputResponses: { user_name: nameAnswer('Ada') },
      requestState: state,
    });
    t.equal(done.body.result?.resultType, 'complete');
    t.equal(textOf(done), 'Hello, Ada!', 'the right result');
    const after = upstream.stats();
    t.equal(after.toolCalls[ELICIT]! - before.toolCalls[ELICIT]!, 1, 'B replayed the call upstream once');
    t.equal(
      after.responsesReceived - before.responsesReceived,
      1,
      "and answered the repeated ask from the retry's answers",
    );

    // Multi-round on B: the round-2 state carries only step2's answer, so B asks step1 again.
    const mr = 'test_input_required_result_multi_round';
    const r1 = await callTool(a.url, mr);
    const r2 = await callTool(a.url, mr, {
      inputResponses: { step1: nameAnswer('Ada') },
      requestState: r1.body.result.requestState,
    });
    t.same(Object.keys(r2.body.result.inputRequests), ['step2']);
    const onB = await callTool(b.url, mr, {
      inputResponses: { step2: { action: 'accept', content: { color: 'red' } } },
      requestState: r2.body.result.requestState,
    });
    t.equal(onB.body.result?.resultType, 'input_required', 'B cannot know step1');
    t.same(Object.keys(onB.body.result?.inputRequests ?? {}), ['step1']);
    const fin = await callTool(b.url, mr, {
      inputResponses: { step1: nameAnswer('Ada') },
      requestState: onB.body.result.requestState,
    });
    t.equal(
      textOf(fin),
      'Multi-round complete for Ada who likes red',
      "step2's answer from the earlier retry was kept",
    );
  },
);

t.test('a state whose holder is lost cannot be replayed twice on the same instance', async (t) => {
  const k = stateKey();
  const a = await startCauseway({ 'upstream.url': upstream.url, 'mrtr.stateKeys': k, 'log.level': 'warn' });
  const b = await startCauseway({ 'upstream.url': upstream.url, 'mrtr.stateKeys': k, 'log.level': 'warn' });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const state = await round1(a.url);
  const first = await callTool(b.url, ELICIT, {
    inputResponses: { user_name: nameAnswer('Ada') },
    requestState: state,
  });
  t.equal(textOf(first), 'Hello, Ada!');
  const before = upstream.stats();
  const again = await callTool(b.url, ELICIT, {
    inputResponses: { user_name: nameAnswer('Eve') },
    requestState: state,
  });
  t.equal(again.body.error?.code, -32602, 'the second use of the state on B is a replay');
  await settle(); // negative check
  t.equal(upstream.stats().toolCalls[ELICIT], before.toolCalls[ELICIT], 'and does not run the tool again');
});

t.test('a state is accepted only for its own held call: refused after that call was cancelled by TTL', async (t) => {
  const short = await startCauseway({ 'upstream.url': upstream.url, 'mrtr.stateTtlMs': 200, 'log.level': 'warn' });
  t.teardown(() => short.close());
  const cancelled = upstream.stats().cancelled;
  const state = await round1(short.url);
  t.ok(
    await until(() => upstream.stats().cancelled > cancelled, { what: 'the held call to be cancelled' }),
    'the held call was cancelled upstream',
  );
  refused(
    t,
    await callTool(short.url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') }, requestState: state }),
    'after TTL',
  );
});
