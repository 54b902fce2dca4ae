// The load a Redis failover test runs through two Causeway replicas (child processes) in front
// of the legacy fixture (a child process too): warm tools/calls, cold keys opened on one replica
// and used on the other (the per-session `counter` proves the session came through Redis),
// multi-round calls whose retry lands on the other replica (handed over on Redis pub/sub), and
// a listen stream on each replica, which hear a change made while Redis has no primary and one
// after. `failover` kills a Redis primary while the load runs and
// resolves once the promotion is seen; Causeway counts as recovered once a cold key opened after
// the promotion is shared both ways (A to B and B to A). Every request is recorded with its
// start, end and outcome; what a test asserts is counted, never timed.

import { randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import { spawnCauseway, type RunningCauseway, type Settings } from '../helpers/causeway.js';
import { SseReader } from '../helpers/sse.js';
import { until } from '../helpers/until.js';
import { spawnFixture, type FixtureProcess } from '../e2e/upstreams.js';
import {
  META_CAPABILITIES,
  modernBody,
  modernHeaders,
  post,
  toolCall,
  type JsonObject,
  type WireResponse,
} from '../e2e/wire.js';

const PRINCIPAL = 'x-causeway-principal';
const ELICIT = { [META_CAPABILITIES]: { elicitation: { form: {} } } };
const MRTR_TOOL = 'test_input_required_result_elicitation';

export interface Outcome {
  kind: 'warm' | 'cold' | 'mrtr-1' | 'mrtr-2' | 'probe' | 'trigger';
  replica: 'A' | 'B';
  start: number;
  end: number;
  ok: boolean;
  /** Why it failed, or a note (a cold key not shared). */
  detail?: string;
}

export interface FailoverReport {
  outcomes: Outcome[];
  /** The replicas' warnings (and back-again notices), summed by message. */
  warnings: string[];
  killAt: number;
  promotedAt: number;
  recoveredAt: number;
  /** Requests started before the kill and not yet answered when it happened. */
  inFlightAtKill: number;
  /** Requests in flight at some time between the kill and the recovery: the ones that may fail. */
  inFlightDuring: number;
  failed: Outcome[];
  failedAfterRecovery: Outcome[];
  /** Initializes beyond one per pool key used: sessions opened again because Redis was away. */
  reinitialized: number;
  /** Cold keys opened on one replica that the other did not find in Redis. */
  unshared: number;
  unsharedAfterRecovery: number;
  /**
   * Multi-round calls whose tool ran again (the retry was not handed to the holder), in all and outside the failover.
   */
  replays: number;
  /** Calls over before the kill. */
  replaysBeforeKill: number;
  replaysAfterRecovery: number;
  /**
   * Per listener: messages read, whether it ended, ms from a change after recovery to its arrival, and from a change
   * made during the failover.
   */
  listeners: Array<{
    replica: 'A' | 'B';
    messages: number;
    ended: boolean;
    deliveredMs: number | undefined;
    duringMs: number | undefined;
  }>;
}

export interface FailoverOptions {
  /** store.* settings of the topology (store.kind is set here). */
  store: Settings;
  /** Kills the primary; resolves at once. */
  kill(): Promise<void>;
  /** Whether the promotion is seen now (asked again until it is, bounded). */
  promoted(): Promise<boolean>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Listener {
  replica: 'A' | 'B';
  received: number[];
  ended: boolean;
  close(): void;
}

async function listen(t: Test, replica: 'A' | 'B', url: string, principal: string): Promise<Listener> {
  const abort = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...modernHeaders('subscriptions/listen'), [PRINCIPAL]: principal },
    body: JSON.stringify(
      modernBody('subscriptions/listen', { notifications: { toolsListChanged: true } }, `listen-${replica}`),
    ),
    signal: abort.signal,
  });
  if (res.status !== 200) throw new Error(`listen on ${replica} answered ${res.status}`);
  const reader = new SseReader(res.body!, { endOnError: true });
  const first = (await reader.nextMessage()) as { method?: string } | undefined;
  if (first?.method !== 'notifications/subscriptions/acknowledged')
    throw new Error(`listen on ${replica} began with ${JSON.stringify(first)}`);
  const l: Listener = { replica, received: [], ended: false, close: () => abort.abort() };
  t.teardown(l.close);
  void (async () => {
    for (;;) {
      const m = (await reader.nextMessage().catch(() => undefined)) as { method?: string } | undefined;
      if (m === undefined) break;
      if (m.method === 'notifications/tools/list_changed') l.received.push(Date.now());
    }
    l.ended = true;
  })();
  return l;
}

export async function runFailover(t: Test, opts: FailoverOptions): Promise<FailoverReport> {
  const fixture: FixtureProcess = await spawnFixture(0, { t });
  const settings: Settings = {
    'upstream.url': fixture.url,
    'store.kind': 'redis',
    ...opts.store,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
    'principal.mode': 'header',
    'principal.hashSecret': randomBytes(16).toString('hex'),
    'subscriptions.keepAliveMs': 200,
    'admin.port': -1,
  };
  const [a, b] = await Promise.all([spawnCauseway(settings, { t }), spawnCauseway(settings, { t })]);
  const replicas: Record<'A' | 'B', RunningCauseway> = { A: a, B: b };
  const other = (r: 'A' | 'B') => (r === 'A' ? 'B' : 'A');
  const baseline = (await fixture.stats()).initializeCount;
  // Pool keys used: principal, plus whether the client could answer elicitation (another fingerprint).
  const keys = new Set<string>();
  const outcomes: Outcome[] = [];

  const call = async (
    kind: Outcome['kind'],
    replica: 'A' | 'B',
    principal: string,
    name: string,
    extra: JsonObject = {},
    meta: JsonObject = {},
  ) => {
    keys.add(`${principal}|${Object.keys(meta).length > 0 ? 'elicit' : 'plain'}`);
    const { body, headers } = toolCall(name, {}, `${kind}-${outcomes.length}-${randomBytes(3).toString('hex')}`, meta);
    (body.params as JsonObject).arguments = (extra.arguments as JsonObject | undefined) ?? {};
    for (const [k, v] of Object.entries(extra)) if (k !== 'arguments') (body.params as JsonObject)[k] = v;
    const o: Outcome = { kind, replica, start: Date.now(), end: 0, ok: false };
    outcomes.push(o);
    let res: WireResponse | undefined;
    try {
      res = await post(replicas[replica].url, body, { ...headers, [PRINCIPAL]: principal }, { timeoutMs: 20_000 });
      o.ok = res.status === 200 && res.json?.error === undefined && res.json?.result !== undefined;
      if (!o.ok) o.detail = `HTTP ${res.status} ${res.text.slice(0, 200)}`;
    } catch (err) {
      o.detail = (err as Error).message;
    }
    o.end = Date.now();
    return { o, res };
  };
  const text = (res: WireResponse | undefined) =>
    (res?.json?.result?.content as Array<{ text?: string }> | undefined)?.[0]?.text;

  let fresh = 0;
  let unshared = 0;
  let unsharedAfterRecovery = 0;
  let recoveredAt = Infinity;
  /** A new key opened on `first`, then used on the other replica: true when the other found it in Redis. */
  const coldPair = async (kind: 'cold' | 'probe', first: 'A' | 'B'): Promise<boolean> => {
    const principal = `${kind}-${fresh++}`;
    const one = await call(kind, first, principal, 'counter');
    if (!one.o.ok || text(one.res) !== '1') {
      if (one.o.ok) (one.o.ok = false), (one.o.detail = `counter said ${text(one.res)} on a new key`);
      return false;
    }
    const two = await call(kind, other(first), principal, 'counter');
    if (!two.o.ok) return false;
    const shared = text(two.res) === '2';
    if (!shared) {
      two.o.detail = `not shared: counter said ${text(two.res)}`;
      if (kind === 'cold') {
        unshared++;
        if (one.o.start >= recoveredAt) unsharedAfterRecovery++;
      }
    }
    return shared;
  };

  /** Start and end of each multi-round call whose tool ran again (its retry was not handed to the holder). */
  const replayed: Array<{ start: number; end: number }> = [];
  const toolRuns = async () => (await fixture.stats()).toolCalls[MRTR_TOOL] ?? 0;
  const mrtr = async (first: 'A' | 'B') => {
    const ran = await toolRuns();
    const start = Date.now();
    await mrtrRounds(first);
    if ((await toolRuns()) - ran > 1) replayed.push({ start, end: Date.now() });
  };
  const mrtrRounds = async (first: 'A' | 'B') => {
    const principal = `mrtr-${first}`;
    const r1 = await call('mrtr-1', first, principal, MRTR_TOOL, {}, ELICIT);
    const state = r1.res?.json?.result?.requestState as string | undefined;
    if (!r1.o.ok || r1.res?.json?.result?.resultType !== 'input_required' || !state) {
      if (r1.o.ok) (r1.o.ok = false), (r1.o.detail = `round 1: ${r1.res?.text.slice(0, 200)}`);
      return;
    }
    const r2 = await call(
      'mrtr-2',
      other(first),
      principal,
      MRTR_TOOL,
      { inputResponses: { user_name: { action: 'accept', content: { name: 'Bob' } } }, requestState: state },
      ELICIT,
    );
    if (r2.o.ok && text(r2.res) !== 'Hello, Bob!')
      (r2.o.ok = false), (r2.o.detail = `round 2: ${r2.res?.text.slice(0, 200)}`);
  };

  // Listen streams on both replicas, on the warm principal's session: one holds the GET stream,
  // the other hears its changes over Redis pub/sub.
  const listeners = [await listen(t, 'A', a.url, 'warm-0'), await listen(t, 'B', b.url, 'warm-0')];
  keys.add('warm-0|plain');

  // The load: bounded in iterations and time whatever happens.
  let stop = false;
  const hardStop = Date.now() + 60_000;
  const MAX_ITERATIONS = 3_000;
  const worker = async (body: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < MAX_ITERATIONS && !stop && Date.now() < hardStop; i++) {
      await body(i);
      await sleep(5);
    }
  };
  const workers = [
    worker((i) => call('warm', i % 2 ? 'A' : 'B', `warm-${i % 3}`, 'echo', { arguments: { text: 'hi' } })),
    worker((i) => call('warm', i % 2 ? 'B' : 'A', `warm-${i % 3}`, 'echo', { arguments: { text: 'hi' } })),
    worker((i) => coldPair('cold', i % 2 ? 'B' : 'A')),
    worker((i) => mrtr(i % 2 ? 'B' : 'A')),
  ];

  const afterStart = (since: number) => outcomes.filter((o) => o.start >= since);
  let killAt = Infinity;
  const finish = async () => {
    stop = true;
    await Promise.all(workers);
  };
  try {
    // Some load before the kill, counted: every kind has gone through at least a few times.
    await until(
      () => ['warm', 'cold', 'mrtr-2'].every((k) => outcomes.filter((o) => o.kind === k && o.end > 0).length >= 4),
      {
        what: 'the load to get going before the kill',
        everyMs: 50,
      },
    );
    const before = [...outcomes];
    t.same(
      before.filter((o) => o.end > 0 && !o.ok).map((o) => `${o.kind}@${o.replica}: ${o.detail}`),
      [],
      'no failure before the kill',
    );

    killAt = Date.now();
    await opts.kill();
    // A change while Redis has no primary: its notification is published (or held) then, and must
    // reach both streams, or be made up for by a may-have-changed once pub/sub is back.
    const changedAt = Date.now();
    const changed = call('trigger', 'A', 'warm-0', 'test_trigger_tool_change');
    await until(opts.promoted, { what: 'the promotion', everyMs: 100 });
    const promotedAt = Date.now();
    await changed;

    // Recovered: a key opened after the promotion is shared through Redis both ways.
    let probes = 0;
    await until(
      async () => {
        probes++;
        return (await coldPair('probe', 'A')) && (await coldPair('probe', 'B'));
      },
      { what: 'Causeway to share a new key through Redis after the promotion', everyMs: 200 },
    ).catch((err: Error) => {
      throw new Error(`${err.message} (${probes} probes)`);
    });
    recoveredAt = Date.now();

    const heardDuring = (l: Listener) => l.received.find((r) => r >= changedAt);
    await until(() => listeners.every(heardDuring), {
      what: 'the change made during the failover on both streams',
      timeoutMs: 20_000,
    }).catch(() => undefined);
    const during = new Map(listeners.map((l) => [l, heardDuring(l)]));

    // A change after recovery reaches both listen streams (one of them over pub/sub).
    const delivered = new Map<Listener, number>();
    for (let i = 0; i < 20 && delivered.size < listeners.length; i++) {
      const at = Date.now();
      await call('trigger', i % 2 ? 'A' : 'B', 'warm-0', 'test_trigger_tool_change');
      // Not heard within a second: the next round triggers another change.
      await until(() => listeners.every((l) => delivered.has(l) || l.received.some((r) => r >= at)), {
        what: 'the change on both streams',
        timeoutMs: 1_000,
        everyMs: 50,
      }).catch(() => undefined);
      for (const l of listeners)
        if (!delivered.has(l) && l.received.some((r) => r >= at))
          delivered.set(l, l.received.find((r) => r >= at)! - at);
    }

    // Load after recovery: every kind again a few times.
    // What did not get through by then is reported by the counts below.
    await until(
      () =>
        ['warm', 'cold', 'mrtr-2'].every(
          (k) => afterStart(recoveredAt).filter((o) => o.kind === k && o.end > 0).length >= 6,
        ),
      {
        what: 'load after the recovery',
        timeoutMs: 15_000,
        everyMs: 50,
      },
    ).catch(() => undefined);
    await finish();

    const after = await fixture.stats();
    const warnings = warningsOf(replicas, killAt);
    const failed = outcomes.filter((o) => !o.ok);
    return {
      outcomes,
      warnings,
      killAt,
      promotedAt,
      recoveredAt,
      inFlightAtKill: outcomes.filter((o) => o.start < killAt && o.end > killAt).length,
      inFlightDuring: outcomes.filter((o) => o.start < recoveredAt && o.end > killAt).length,
      failed,
      failedAfterRecovery: failed.filter((o) => o.start >= recoveredAt),
      reinitialized: after.initializeCount - baseline - keys.size,
      unshared,
      unsharedAfterRecovery,
      replays: replayed.length,
      replaysBeforeKill: replayed.filter((r) => r.end < killAt).length,
      replaysAfterRecovery: replayed.filter((r) => r.start >= recoveredAt).length,
      listeners: listeners.map((l) => {
        const at = during.get(l);
        return {
          replica: l.replica,
          messages: l.received.length,
          ended: l.ended,
          deliveredMs: delivered.get(l),
          duringMs: at === undefined ? undefined : at - changedAt,
        };
      }),
    };
  } catch (err) {
    for (const w of warningsOf(replicas, killAt)) t.comment(`log ${w}`);
    for (const o of outcomes.filter((x) => !x.ok || x.detail).slice(-12))
      t.comment(`last trouble: ${o.kind}@${o.replica} +${o.start - killAt} ms: ${o.detail}`);
    throw err;
  } finally {
    await finish();
    for (const l of listeners) l.close();
  }
}

/** What each replica warned about (and its back-again notices), by message, first and last time relative to `since`. */
function warningsOf(replicas: Record<string, RunningCauseway>, since: number): string[] {
  const warnings: string[] = [];
  for (const [name, c] of Object.entries(replicas)) {
    const seen = new Map<string, { n: number; first: number; last: number }>();
    for (const line of c.logs) {
      let j: { level?: number; msg?: string; time?: string; op?: string; err?: { message?: string } | string };
      try {
        j = JSON.parse(line) as typeof j;
      } catch {
        continue;
      }
      if ((j.level ?? 0) < 40 && !/again|reconnected/.test(j.msg ?? '')) continue;
      const err = typeof j.err === 'string' ? j.err : j.err?.message;
      const k = `${j.msg}${j.op ? ` (${j.op})` : ''}${err ? `: ${err.slice(0, 120)}` : ''}`;
      const at = Date.parse(j.time ?? '') - since;
      const e = seen.get(k) ?? { n: 0, first: at, last: at };
      e.n++;
      e.last = at;
      seen.set(k, e);
    }
    for (const [k, e] of seen) warnings.push(`${name}: ${k} x${e.n} at ${e.first}..${e.last} ms`);
  }
  return warnings;
}

/** Prints the figures and asserts the counts every failover test shares. */
export function assertRecovered(t: Test, topology: string, r: FailoverReport): void {
  const kinds = ['warm', 'cold', 'mrtr-1', 'mrtr-2', 'probe', 'trigger'] as const;
  const by = kinds.map((k) => `${k} ${r.outcomes.filter((o) => o.kind === k).length}`).join(', ');
  t.comment(`${topology}: ${r.outcomes.length} requests (${by})`);
  t.comment(
    `${topology}: promotion seen ${r.promotedAt - r.killAt} ms after the ` +
      `kill; Causeway recovered ${r.recoveredAt - r.killAt} ms after the kill`,
  );
  t.comment(
    `${topology}: failed ${r.failed.length} (in flight at the kill: ${r.inFlightAtKill}, during ` +
      `the failover: ${r.inFlightDuring}; after recovery: ${r.failedAfterRecovery.length}); ` +
      `re-initialized upstream sessions ${r.reinitialized}; cold keys not shared ${r.unshared} ` +
      `(after recovery ${r.unsharedAfterRecovery}); multi-round replays ${r.replays} (before ` +
      `the kill ${r.replaysBeforeKill}, after recovery ${r.replaysAfterRecovery})`,
  );
  for (const l of r.listeners) {
    t.comment(
      `${topology}: listen on ${l.replica}: ${l.messages} changes heard, ` +
        `ended ${l.ended}, a change during the failover arrived in ${l.duringMs ?? 'never'} ` +
        `ms, a change after recovery in ${l.deliveredMs ?? 'never'} ms`,
    );
  }
  const phases: Array<[string, (o: Outcome) => boolean]> = [
    ['before the kill', (o) => o.start < r.killAt],
    ['kill to recovery', (o) => o.start >= r.killAt && o.start < r.recoveredAt],
    ['after recovery', (o) => o.start >= r.recoveredAt],
  ];
  for (const [phase, inPhase] of phases) {
    const line = kinds
      .map((k) => {
        const ms = r.outcomes
          .filter((o) => o.kind === k && inPhase(o))
          .map((o) => o.end - o.start)
          .sort((x, y) => x - y);
        return ms.length
          ? `${k} n=${ms.length} median ${ms[Math.floor(ms.length / 2)]} max ${ms[ms.length - 1]}`
          : undefined;
      })
      .filter(Boolean)
      .join('; ');
    t.comment(`${topology}: ${phase}, ms: ${line}`);
  }
  for (const w of r.warnings) t.comment(`${topology}: log ${w}`);
  for (const f of r.failed)
    t.comment(`${topology}: failed ${f.kind}@${f.replica} +${f.start - r.killAt} ms: ${f.detail}`);

  t.same(
    r.failedAfterRecovery.map((o) => `${o.kind}@${o.replica}: ${o.detail}`),
    [],
    'no request started after recovery failed',
  );
  // A request in flight during the failover may fail (e.g. a multi-round retry whose handoff
  // could not be published while Redis had no primary); one over before the kill may not.
  t.same(
    r.failed.filter((o) => o.end <= r.killAt).map((o) => `${o.kind}@${o.replica}: ${o.detail}`),
    [],
    'nothing failed before the kill',
  );
  t.ok(
    r.failed.length <= r.inFlightDuring,
    `failures (${r.failed.length}) at most the requests in flight during the failover (${r.inFlightDuring})`,
  );
  t.ok(
    r.outcomes.some((o) => o.start >= r.recoveredAt && o.kind === 'mrtr-2' && o.ok),
    'multi-round calls crossing replicas completed after recovery',
  );
  t.equal(r.replaysBeforeKill, 0, 'before the kill every retry crossing replicas was handed to the holder (no replay)');
  t.equal(r.unsharedAfterRecovery, 0, 'every cold key opened after recovery was shared through Redis');
  for (const l of r.listeners) {
    t.notOk(l.ended, `the listen stream on ${l.replica} stayed open through the failover`);
    t.ok(
      l.duringMs !== undefined,
      `a change made during the failover reached the listen stream ` +
        `on ${l.replica} (nothing published during the failover is lost)`,
    );
    t.ok(l.deliveredMs !== undefined, `a change after recovery reached the listen stream on ${l.replica}`);
  }
}
