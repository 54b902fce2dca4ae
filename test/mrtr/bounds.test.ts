// Bounds on held calls: per principal (mrtr.maxPendingPerPrincipal), in total (mrtr.maxPending),
// and in time (mrtr.stateTtlMs: the upstream call is cancelled and its slot freed).

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { callTool, ELICIT, nameAnswer, rpc, sleep, textOf, type Reply } from './wire.js';
import { until } from '../helpers/until.js';

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());

const SECRET = 'bounds-test-secret-0123456789';
const as = (who: string) => ({ headers: { 'x-causeway-principal': who } });

function isInput(r: Reply): boolean {
  return r.body.result?.resultType === 'input_required';
}

function isOverloaded(r: Reply): boolean {
  return r.status === 503 && r.body.error?.code === -32603;
}

t.test(
  'maxPendingPerPrincipal=2: the third held call is refused (503, -32603); a freed slot is reusable',
  async (t) => {
    const c = await startCauseway({
      'upstream.url': upstream.url,
      'mrtr.maxPendingPerPrincipal': 2,
      'principal.mode': 'header',
      'principal.hashSecret': SECRET,
      'log.level': 'warn',
    });
    t.teardown(() => c.close());
    const before = upstream.stats().toolCalls[ELICIT] ?? 0;
    const cancelledBefore = upstream.stats().cancelled;
    const a1 = await callTool(c.url, ELICIT, {}, as('alice'));
    const a2 = await callTool(c.url, ELICIT, {}, as('alice'));
    t.ok(isInput(a1) && isInput(a2), 'two calls held');
    const a3 = await callTool(c.url, ELICIT, {}, as('alice'));
    t.equal(a3.status, 503, 'HTTP 503');
    t.equal(a3.body.error?.code, -32603, '-32603');
    t.match(a3.body.error?.message, /pending/i);
    // Refused before it started, or started and cancelled: either way it is not left open upstream.
    t.ok(
      await until(
        () => (upstream.stats().toolCalls[ELICIT] ?? 0) - before - (upstream.stats().cancelled - cancelledBefore) === 2,
        {
          what: 'only the two held calls open upstream',
        },
      ),
      'the refused call is not left open upstream',
    );

    const b1 = await callTool(c.url, ELICIT, {}, as('bob'));
    t.ok(isInput(b1), 'another principal has its own allowance');

    const done = await callTool(
      c.url,
      ELICIT,
      { inputResponses: { user_name: nameAnswer('A1') }, requestState: a1.body.result.requestState },
      as('alice'),
    );
    t.equal(textOf(done), 'Hello, A1!', 'a retry of a held call is not refused');
    const a4 = await callTool(c.url, ELICIT, {}, as('alice'));
    t.ok(isInput(a4), 'the completed call freed its slot');
    const a5 = await callTool(c.url, ELICIT, {}, as('alice'));
    t.ok(isOverloaded(a5), 'full again');

    // A retry that gets input_required again keeps its one slot (no double count).
    const again = await callTool(
      c.url,
      ELICIT,
      { inputResponses: {}, requestState: a2.body.result.requestState },
      as('alice'),
    );
    t.ok(isInput(again), 'a held call asked again');
    t.ok(isOverloaded(await callTool(c.url, ELICIT, {}, as('alice'))), 'still two held, still full');

    for (const [r, who] of [
      [again, 'alice'],
      [a4, 'alice'],
      [b1, 'bob'],
    ] as const) {
      const fin = await callTool(
        c.url,
        ELICIT,
        { inputResponses: { user_name: nameAnswer(who) }, requestState: r.body.result.requestState },
        as(who),
      );
      t.equal(textOf(fin), `Hello, ${who}!`);
    }
  },
);

t.test('maxPendingPerPrincipal=2 also holds for round-1 requests that arrive together', async (t) => {
  const c = await startCauseway({
    'upstream.url': upstream.url,
    'mrtr.maxPendingPerPrincipal': 2,
    'log.level': 'warn',
  });
  t.teardown(() => c.close());
  const replies = await Promise.all(Array.from({ length: 6 }, () => callTool(c.url, ELICIT)));
  const held = replies.filter(isInput).length;
  const refused = replies.filter(isOverloaded).length;
  t.equal(held, 2, `held ${held} of 6 at once (limit 2)`);
  t.equal(refused, 4);
});

t.test('mrtr.maxPending bounds the replica in total', async (t) => {
  const c = await startCauseway({
    'upstream.url': upstream.url,
    'mrtr.maxPending': 3,
    'principal.mode': 'header',
    'principal.hashSecret': SECRET,
    'log.level': 'warn',
  });
  t.teardown(() => c.close());
  const held = [];
  for (const who of ['p1', 'p2', 'p3']) held.push(await callTool(c.url, ELICIT, {}, as(who)));
  t.ok(held.every(isInput), 'three principals, three held calls');
  const fourth = await callTool(c.url, ELICIT, {}, as('p4'));
  t.ok(isOverloaded(fourth), 'the fourth (another principal) is refused: 503 / -32603');
  for (const [r, who] of [
    [held[0]!, 'p1'],
    [held[1]!, 'p2'],
  ] as const) {
    const fin = await callTool(
      c.url,
      ELICIT,
      { inputResponses: { user_name: nameAnswer(who) }, requestState: r.body.result.requestState },
      as(who),
    );
    t.equal(textOf(fin), `Hello, ${who}!`, 'retries of held calls still go through at the limit');
  }
});

t.test('at the limit, calls that never ask are still served', async (t) => {
  const c = await startCauseway({
    'upstream.url': upstream.url,
    'mrtr.maxPendingPerPrincipal': 1,
    'log.level': 'warn',
  });
  t.teardown(() => c.close());
  t.ok(
    isInput(await callTool(c.url, ELICIT)),
    "the one slot is taken (and, with principal.mode=none, it is everyone's)",
  );
  const echo = await callTool(c.url, 'echo', { arguments: { text: 'still serving' } });
  t.equal(textOf(echo), 'still serving', 'tools/call of a tool that does not ask');
  const read = await rpc(c.url, 'resources/read', { uri: 'test://static-text' });
  t.equal(read.body.result?.contents?.[0]?.text, 'This is the content of the static text resource.', 'resources/read');
  const prompt = await rpc(c.url, 'prompts/get', { name: 'test_simple_prompt' });
  t.equal(prompt.body.result?.messages?.length, 1, 'prompts/get');
  const upFront = await callTool(c.url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') } });
  t.equal(textOf(upFront), 'Hello, Ada!', 'a call whose asks are answered up front never needs holding');
});

t.test('stateTtlMs: an unanswered held call is cancelled upstream and its slot freed', async (t) => {
  const TTL = 600;
  const c = await startCauseway({
    'upstream.url': upstream.url,
    'mrtr.stateTtlMs': TTL,
    'mrtr.maxPendingPerPrincipal': 1,
    // The held call's own deadline is stateTtlMs + this: out of reach, so only the TTL can cancel it.
    'upstream.requestTimeoutMs': 600_000,
    'log.level': 'warn',
  });
  t.teardown(() => c.close());
  // The call earlier tests held ends upstream as their Causeway drains: let it, so its cancel is not counted here.
  const running = () => (upstream.stats().toolCalls[ELICIT] ?? 0) - (upstream.stats().toolCallsEnded[ELICIT] ?? 0);
  await until(() => running() === 0, { what: 'calls of earlier tests to end upstream' });
  const callsBefore = upstream.stats().toolCalls[ELICIT] ?? 0;
  const cancelledBefore = upstream.stats().cancelled;
  /** Calls started upstream by this test and not cancelled there. */
  const open = () =>
    (upstream.stats().toolCalls[ELICIT] ?? 0) - callsBefore - (upstream.stats().cancelled - cancelledBefore);
  const started = Date.now();
  const r1 = await callTool(c.url, ELICIT);
  t.ok(isInput(r1));
  t.ok(isOverloaded(await callTool(c.url, ELICIT)), 'the one slot is taken');
  // The refused call was never started, or started and cancelled at once; the held one is
  // cancelled at its TTL. Counting both, none is left open once the held one is cancelled.
  t.ok(
    await until(() => open() === 0, { what: 'the held call to be cancelled', timeoutMs: 60_000, everyMs: 5 }),
    'the fixture saw the call cancelled',
  );
  const after = Date.now() - started;
  t.ok(after >= TTL - 50, `cancelled after the TTL, not before (${after} ms)`);
  t.equal(open(), 0, 'exactly one cancel for each call started: the held call cancelled once');
  const r2 = await callTool(c.url, ELICIT);
  t.ok(isInput(r2), 'the slot is free again');
  const expired = await callTool(c.url, ELICIT, {
    inputResponses: { user_name: nameAnswer('late') },
    requestState: r1.body.result.requestState,
  });
  t.equal(expired.body.error?.code, -32602, 'the old state is refused');
  // Each round restarts the clock: answered within the TTL of the last round, the call completes.
  await sleep(TTL / 2); // lower bound: together with the next wait, more than the TTL after round 1
  const again = await callTool(c.url, ELICIT, { inputResponses: {}, requestState: r2.body.result.requestState });
  t.ok(isInput(again), 'asked again, which restarts the TTL');
  await sleep(TTL * 0.6); // negative check: round 1's TTL, now past, must not end the call
  const done = await callTool(c.url, ELICIT, {
    inputResponses: { user_name: nameAnswer('Ada') },
    requestState: again.body.result.requestState,
  });
  t.equal(textOf(done), 'Hello, Ada!', 'more than the TTL after round 1, within the TTL of the last round');
});
