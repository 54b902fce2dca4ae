// A multi-round call whose holder is gone between rounds, with real processes: Redis, the legacy
// fixture and two Causeway replicas. With the fixture's event store, the replica that gets the
// retry takes the call up on its upstream stream (GET + Last-Event-ID), so the tool's side
// effect before its first ask happens once (via="resume"), whether the holder was SIGKILLed or
// drained (SIGTERM). Without an event store the stream cannot be resumed and the call is replayed
// (via="replay"): it still answers, with the side effect twice, and the original call, left
// waiting upstream, is cancelled.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { spawnCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { stopProcess } from '../helpers/processes.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { spawnFixture, type FixtureProcess } from './upstreams.js';
import { META_CAPABILITIES, modernBody, modernHeaders, type JsonObject } from './wire.js';

const TOOL = 'side_effect_rounds';
const CAPS = { elicitation: { form: {} } };
let nextId = 1;

interface Reply {
  status: number;
  result?: {
    resultType?: string;
    inputRequests?: Record<string, unknown>;
    requestState?: string;
    content?: Array<{ text?: string }>;
  };
  error?: { code: number; message: string };
}

async function call(url: string, extra: Record<string, unknown> = {}): Promise<Reply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: modernHeaders('tools/call', TOOL),
    body: JSON.stringify(
      modernBody('tools/call', { name: TOOL, arguments: {}, ...extra } as JsonObject, nextId++, {
        [META_CAPABILITIES]: CAPS,
      }),
    ),
  });
  return { status: res.status, ...((await res.json()) as Omit<Reply, 'status'>) };
}

const accept = (content: Record<string, string>) => ({ action: 'accept', content });

async function retries(replica: RunningCauseway, via: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', replica.adminUrl))).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`causeway_mrtr_retries_total{upstream="default",method="tools/call",via="${via}"}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

interface Setup {
  fixture: FixtureProcess;
  a: RunningCauseway & { child: import('node:child_process').ChildProcess };
  b: RunningCauseway;
}

/**
 * Redis, the fixture (with `args`) and replicas A and B sharing the store and the state keys; all stopped when `t`
 * ends.
 */
async function setup(t: Test, args: string[] = []): Promise<Setup> {
  const redis = await startRedis(t);
  t.teardown(() => redis.stop());
  const fixture = await spawnFixture(0, { t, args });
  const settings = {
    'upstream.url': fixture.url,
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
  };
  const [a, b] = await Promise.all([spawnCauseway(settings, { t }), spawnCauseway(settings, { t })]);
  return { fixture, a, b };
}

/** Round 1 on A: the first question, with its state. */
async function firstRound(t: Test, s: Setup): Promise<string> {
  const r1 = await call(s.a.url);
  t.equal(r1.result?.resultType, 'input_required', 'round 1 on A');
  t.ok(r1.result?.inputRequests?.['first'], 'the first question');
  t.equal((await s.fixture.stats()).sideEffects, 1, 'the side effect happened before the first ask');
  return r1.result!.requestState!;
}

/** The rest of the call on B: round 2 (the second question), then the result. */
async function finishOnB(t: Test, s: Setup, state: string): Promise<string | undefined> {
  const r2 = await call(s.b.url, { inputResponses: { first: accept({ name: 'Ann' }) }, requestState: state });
  t.equal(r2.result?.resultType, 'input_required', 'round 2 comes from B');
  t.ok(r2.result?.inputRequests?.['second'], 'the second question');
  t.notOk(r2.result?.inputRequests?.['first'], 'the first one was answered');
  const r3 = await call(s.b.url, {
    inputResponses: { second: accept({ color: 'red' }) },
    requestState: r2.result?.requestState,
  });
  return r3.result?.content?.[0]?.text;
}

t.test('modern_client-to-legacy_upstream-holder-killed-between-rounds-resumes-the-upstream-stream', async (t) => {
  const s = await setup(t);
  const state = await firstRound(t, s);
  await stopProcess(s.a.child, { signal: 'SIGKILL' });
  t.equal(
    await finishOnB(t, s, state),
    'name=Ann; color=red; side effects=1',
    'the call completes, its side effect counted once',
  );
  const stats = await s.fixture.stats();
  t.equal(stats.sideEffects, 1, 'the tool had its side effect once');
  t.equal(stats.toolCalls[TOOL], 1, 'the tool was called once');
  t.equal(stats.cancelled, 0, 'nothing was cancelled upstream');
  t.equal(await retries(s.b, 'resume'), 1, 'counted as a resume');
  t.equal(await retries(s.b, 'replay'), 0, 'no replay');
  t.equal(await retries(s.b, 'held'), 1, 'round 2 was then held on B');
  const again = await call(s.b.url, { inputResponses: { first: accept({ name: 'Eve' }) }, requestState: state });
  t.equal(again.error?.code, -32602, 'the state, once resumed, is refused on the replica that used it');
});

t.test('modern_client-to-legacy_upstream-holder-drained-between-rounds-lets-go-and-the-call-resumes', async (t) => {
  const s = await setup(t);
  const state = await firstRound(t, s);
  await s.a.close();
  t.equal((await s.fixture.stats()).cancelled, 0, 'the draining replica did not cancel the held call');
  t.equal(
    await finishOnB(t, s, state),
    'name=Ann; color=red; side effects=1',
    'the call completes on B, its side effect counted once',
  );
  t.equal((await s.fixture.stats()).sideEffects, 1);
  t.equal(await retries(s.b, 'resume'), 1, 'counted as a resume');
});

t.test('modern_client-to-legacy_upstream-holder-killed-without-upstream-event-store-replays', async (t) => {
  const s = await setup(t, ['--no-resumable']);
  const state = await firstRound(t, s);
  await stopProcess(s.a.child, { signal: 'SIGKILL' });
  t.equal(await finishOnB(t, s, state), 'name=Ann; color=red; side effects=2', 'the replayed call still answers');
  t.equal((await s.fixture.stats()).sideEffects, 2, 'the replay repeated the side effect');
  t.equal(await retries(s.b, 'replay'), 1, 'counted as a replay');
  t.equal(await retries(s.b, 'resume'), 0, 'nothing to resume');
  // The original call, left waiting on its first question by the killed holder, is cancelled.
  const ended = await until(
    async () => {
      const stats = await s.fixture.stats();
      return stats.toolCallsEnded[TOOL] === 2 && stats;
    },
    { what: 'the original call to end upstream', timeoutMs: 30_000, everyMs: 50 },
  );
  t.equal(ended.cancelled, 1, 'the replay cancelled the original call upstream');
  t.equal(ended.toolCalls[TOOL], 2, 'the original and the replay, no more');
});

t.test('modern_client-to-legacy_upstream-holder-killed-and-upstream-session-gone-replays', async (t) => {
  const s = await setup(t);
  const state = await firstRound(t, s);
  await stopProcess(s.a.child, { signal: 'SIGKILL' });
  // The call's session, and the upstream's scout once up (its client can be asked: subscriptions/standing.ts).
  t.ok((await s.fixture.expireSessions()) >= 1, 'the upstream forgot the session');
  t.equal(await finishOnB(t, s, state), 'name=Ann; color=red; side effects=1', 'replayed on a new session, it answers');
  t.equal((await s.fixture.stats()).sideEffects, 2, 'the replay repeated the side effect');
  t.equal(await retries(s.b, 'resume'), 0, 'the stream could not be resumed');
  t.equal(await retries(s.b, 'replay'), 1, 'counted as a replay');
});
