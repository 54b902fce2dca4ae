// A held call's life beyond the happy path: the upstream loses the session or gives up while the
// client is thinking, and Causeway drains with calls held.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { callTool, ELICIT, nameAnswer, sleep, textOf } from './wire.js';
import { until } from '../helpers/until.js';

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());

t.test('drain ends held calls upstream', async (t) => {
  const c = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
  const before = upstream.stats();
  const r1 = await callTool(c.url, ELICIT);
  const r2 = await callTool(c.url, 'test_input_required_result_multi_round');
  t.equal(r1.body.result?.resultType, 'input_required');
  t.equal(r2.body.result?.resultType, 'input_required');
  await c.close();
  // Cancelled, or its session ended (the memory store ends its sessions on drain).
  t.ok(
    await until(
      () => {
        const s = upstream.stats();
        return s.cancelled - before.cancelled >= 2 || s.sessionsDeleted > before.sessionsDeleted;
      },
      { what: 'the held calls to end upstream' },
    ),
    'the upstream no longer holds them',
  );
});

t.test('the upstream loses its session while a call is held: a later retry replays it on a new session', async (t) => {
  const c = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
  t.teardown(() => c.close());
  const b = await callTool(c.url, ELICIT);
  const resumes = upstream.stats().headerCounts['last-event-id'] ?? 0;
  await upstream.expireSessions();
  // The held stream tries to resume (after the fixture's 500 ms retry hint) and is refused at
  // once: the 404 is written before the count can be read, so the loss is noticed.
  await until(() => (upstream.stats().headerCounts['last-event-id'] ?? 0) > resumes, {
    what: 'the held stream to try to resume',
  });
  const rb = await callTool(c.url, ELICIT, {
    inputResponses: { user_name: nameAnswer('Bo') },
    requestState: b.body.result.requestState,
  });
  t.equal(textOf(rb), 'Hello, Bo!', `retry after the loss was noticed: ${JSON.stringify(rb.body).slice(0, 200)}`);
});

t.test('the upstream loses its session just before the retry: the client is not blamed', async (t) => {
  const c = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
  t.teardown(() => c.close());
  const a = await callTool(c.url, ELICIT);
  await upstream.expireSessions();
  // The retry races the held stream noticing the loss: its answer may go to the dead session.
  const ra = await callTool(c.url, ELICIT, {
    inputResponses: { user_name: nameAnswer('Ada') },
    requestState: a.body.result.requestState,
  });
  t.comment(`retry at once: ${JSON.stringify(ra.body).slice(0, 200)}`);
  if (textOf(ra) !== 'Hello, Ada!') {
    t.not(ra.body.error?.code, -32602, "not refused as the client's fault");
    t.ok(ra.status >= 500, `an upstream-side error (${ra.status})`);
  } else t.pass('replayed');
  // Either way the client can start over.
  const fresh = await callTool(c.url, ELICIT, { inputResponses: { user_name: nameAnswer('Ada') } });
  t.equal(textOf(fresh), 'Hello, Ada!');
});

t.test('a held call outlives upstream.requestTimeoutMs while the state is still valid', async (t) => {
  const c = await startCauseway({
    'upstream.url': upstream.url,
    'upstream.requestTimeoutMs': 300,
    'mrtr.stateTtlMs': 10_000,
    'log.level': 'warn',
  });
  t.teardown(() => c.close());
  const r1 = await callTool(c.url, ELICIT);
  const calls = upstream.stats().toolCalls[ELICIT];
  await sleep(700); // negative check: past upstream.requestTimeoutMs, which must not end a held call
  const r2 = await callTool(c.url, ELICIT, {
    inputResponses: { user_name: nameAnswer('Ada') },
    requestState: r1.body.result.requestState,
  });
  t.equal(textOf(r2), 'Hello, Ada!', `the user answered within stateTtlMs: ${JSON.stringify(r2.body).slice(0, 200)}`);
  t.equal(upstream.stats().toolCalls[ELICIT], calls, 'the held call itself completed: no replay');
});

t.test('a retry after the call finished upstream on its own is refused, not replayed', async (t) => {
  // The fixture's ask times out upstream (askTimeoutMs), so the tool fails there while held.
  const quick = await startLegacyServer({ askTimeoutMs: 200 });
  t.teardown(() => quick.close());
  const c = await startCauseway({ 'upstream.url': quick.url, 'log.level': 'warn' });
  t.teardown(() => c.close());
  const ended = quick.stats().toolCallsEnded[ELICIT] ?? 0;
  const r1 = await callTool(c.url, ELICIT);
  await until(() => (quick.stats().toolCallsEnded[ELICIT] ?? 0) > ended, { what: 'the ask to time out upstream' });
  const before = quick.stats();
  const r2 = await callTool(c.url, ELICIT, {
    inputResponses: { user_name: nameAnswer('Ada') },
    requestState: r1.body.result.requestState,
  });
  // The upstream's own answer (an error) is relayed: the call is over, it is not run again.
  t.ok(r2.body.error !== undefined || r2.body.result?.isError === true, 'the upstream failure, not a result');
  t.not(textOf(r2), 'Hello, Ada!', 'not replayed');
  t.equal(quick.stats().toolCalls[ELICIT], before.toolCalls[ELICIT], 'no new upstream call');
  t.comment(`upstream ask timeout relayed as: ${JSON.stringify(r2.body).slice(0, 200)}`);
});
