// The scale phases: what idle pooled upstream sessions cost when Causeway runs as several
// replicas sharing one Redis. `scale`: 3 replicas on one redis-server, for 1,000 and 10,000
// principals. `scale-cluster`: 6 replicas on a 3-primary Redis Cluster, 10,000 principals, plus
// a warm pass. Each principal opens one pooled session with one modern tools/call; Redis commands
// are counted per cold session, per first touch on another replica and per second of idle time,
// and each replica's RSS per pooled session and its sockets to the upstream are read from /proc.
// Commands are counted twice: `sent` by MONITOR (a script call is one command; the liveness beats,
// the last-use batch and the idle sweep told apart by what they are) and `executed` by INFO
// commandstats (a script's inner commands counted too).
//
// Environment knobs: BENCH_SCALE_SESSIONS (1000,10000), BENCH_SCALE_CLUSTER_SESSIONS (10000),
// BENCH_SCALE_REPLICAS (3), BENCH_SCALE_CLUSTER_REPLICAS (6), BENCH_SCALE_CONCURRENCY (48),
// BENCH_SCALE_FIRST_TOUCH (200 principals), BENCH_SCALE_SETTLE_MS (6000), BENCH_SCALE_IDLE_MS
// (30000), BENCH_SCALE_TOOLS (0: the SDK fixture's built-in tools only), BENCH_SCALE_CAPS (JSON
// client capabilities, default {}), BENCH_SCALE_SETTINGS (JSON object of extra Causeway
// settings; those this build lacks are reported and left out).

import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Job, SpreadJob, SpreadResult } from './load-worker.js';
import { collectGarbage } from './inspector.js';
import { findBinary, freePort, rssMb, sleep } from './procs.js';
import { RedisMonitor } from './redis-monitor.js';
import {
  DIST,
  hasSetting,
  metricsOf,
  startCauseway,
  startRedis,
  startRedisCluster,
  startUpstream,
  type Proxy,
  type Upstream,
} from './services.js';
import type { BenchResults, RedisDelta, ScaleReplica, ScaleRun, ScaleStep, SentDelta } from './types.js';

const PRINCIPAL_HEADER = 'x-causeway-principal';

const num = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const SESSIONS = (process.env.BENCH_SCALE_SESSIONS ?? '1000,10000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const CLUSTER_SESSIONS = num('BENCH_SCALE_CLUSTER_SESSIONS', 10_000);
const REPLICAS = num('BENCH_SCALE_REPLICAS', 3);
const CLUSTER_REPLICAS = num('BENCH_SCALE_CLUSTER_REPLICAS', 6);
const CONCURRENCY = num('BENCH_SCALE_CONCURRENCY', 48);
const FIRST_TOUCH = num('BENCH_SCALE_FIRST_TOUCH', 200);
// The fill's and the first touches' last uses reach Redis in a batch up to one tick (5 s) after
// them: settling for less would count that batch as idle traffic.
const SETTLE_MS = num('BENCH_SCALE_SETTLE_MS', 6000);
// 30 s: every replica's idle sweep (every 30 s at the default store.idleTtlMs) falls in it once.
const IDLE_MS = num('BENCH_SCALE_IDLE_MS', 30_000);
// Each cold session lists the upstream's tools once; a short list keeps that out of the figures
// (0: the SDK fixture's built-in tools only).
const TOOLS = num('BENCH_SCALE_TOOLS', 0);

export interface ScaleEnv {
  worker: { run<T>(job: Job): Promise<T> };
  logDir: string;
  results: BenchResults;
  say(msg: string): void;
}

/** The Redis the replicas share, whichever shape it has. */
interface SharedRedis {
  label: string;
  /** host:port of each node (each primary of a Cluster): one MONITOR each. */
  nodes: string[];
  settings: Record<string, string | number>;
  command: string;
  commands(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

function jsonEnv(name: string): Record<string, unknown> {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return {};
  const v: unknown = JSON.parse(raw);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${name} must be a JSON object`);
  return v as Record<string, unknown>;
}

/** BENCH_SCALE_SETTINGS, split into what this build of Causeway has and what it lacks. */
function extraSettings(): { pass: Record<string, string | number>; skipped: string[] } {
  const pass: Record<string, string | number> = {};
  const skipped: string[] = [];
  for (const [k, v] of Object.entries(jsonEnv('BENCH_SCALE_SETTINGS'))) {
    if (!hasSetting(k)) skipped.push(k);
    else pass[k] = typeof v === 'string' || typeof v === 'number' ? v : JSON.stringify(v);
  }
  return { pass, skipped };
}

/** The bench's own commands: the MONITOR fences and MONITOR itself (INFO is left out already). */
const OWN = new Set(['echo', 'monitor']);

function delta(before: Record<string, number>, after: Record<string, number>, ops: number): RedisDelta {
  const byName: Record<string, number> = {};
  for (const [name, n] of Object.entries(after))
    if (!OWN.has(name) && n - (before[name] ?? 0) > 0) byName[name] = n - (before[name] ?? 0);
  const total = Object.values(byName).reduce((a, b) => a + b, 0);
  return { total, byName, perOp: ops > 0 ? total / ops : NaN };
}

/** Sum of the causeway_pooled_sessions gauge over its labels; undefined where this build has none. */
async function pooledSessions(cw: Proxy): Promise<number | undefined> {
  let sum: number | undefined;
  for (const m of (await metricsOf(cw.adminOrigin)).matchAll(
    /^causeway_pooled_sessions(?:\{[^}]*\})? ([0-9.eE+-]+)$/gm,
  ))
    sum = (sum ?? 0) + Number(m[1]);
  return sum;
}

/**
 * ESTABLISHED TCP connections of one process to a remote port. /proc/<pid>/net/tcp lists the
 * whole network namespace, so only the rows whose inode is one of the process's own sockets count.
 */
export function socketsTo(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      /* closed meanwhile */
    }
  }
  let n = 0;
  for (const file of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, 'utf8');
    } catch {
      continue;
    }
    // sl local_address rem_address st ... inode (10th column); st 01 = ESTABLISHED.
    for (const line of text.split('\n').slice(1)) {
      const c = line.trim().split(/\s+/);
      if (c.length < 10 || c[3] !== '01') continue;
      if (Number.parseInt(c[2]!.split(':')[1]!, 16) === port && inodes.has(c[9]!)) n++;
    }
  }
  return n;
}

async function upstreamStats(
  up: Upstream,
): Promise<{ initializeCount: number; sessionsOpen?: number; getStreamsOpen?: number }> {
  const s = (await (await fetch(`${up.origin}/__stats`)).json()) as Record<string, unknown>;
  const opt = (v: unknown) => (typeof v === 'number' ? v : undefined);
  return {
    initializeCount: Number(s.initializeCount),
    sessionsOpen: opt(s.sessionsOpen),
    getStreamsOpen: opt(s.getStreamsOpen),
  };
}

const cmd = (c: string, logDir: string) =>
  c.replace(process.execPath, 'node').replace(DIST, 'dist/').replaceAll(logDir, '$TMP');

async function sharedRedis(phase: ScaleRun['phase'], dir: string, logDir: string): Promise<SharedRedis> {
  const bin = findBinary('redis-server');
  if (!bin) throw new Error('redis-server not found on PATH');
  if (phase === 'scale') {
    const r = await startRedis(bin, dir);
    return {
      label: 'one redis-server',
      nodes: [r.url.replace('redis://', '')],
      settings: { 'store.redisUrl': r.url },
      command: cmd(r.svc.command, logDir),
      commands: r.commands,
      stop: r.stop,
    };
  }
  const cli = findBinary('redis-cli');
  if (!cli) throw new Error('redis-cli not found on PATH (needed to create the cluster)');
  const c = await startRedisCluster(bin, cli, dir, 3);
  return {
    label: 'Redis Cluster, 3 primaries',
    nodes: c.nodes,
    settings: { 'store.redisCluster': c.nodes.join(',') },
    command:
      `${cmd(c.svcs[0]!.command, logDir)}   # x3, then redis-cli --cluster ` +
      `create ${c.nodes.join(' ')} --cluster-replicas 0 --cluster-yes`,
    commands: c.commands,
    stop: c.stop,
  };
}

interface Stage {
  env: ScaleEnv;
  redis: SharedRedis;
  monitor: RedisMonitor;
  replicas: Proxy[];
  caps: Record<string, unknown>;
  prefix: string;
}

/** One pass of tools/calls through the load worker, with the Redis commands sent and executed meanwhile. */
async function pass(
  s: Stage,
  range: Pick<SpreadJob, 'first' | 'end' | 'step' | 'shift' | 'principals'>,
  prefix = s.prefix,
): Promise<ScaleStep> {
  const before = await s.redis.commands();
  const f0 = await s.monitor.fence();
  const r = await s.env.worker.run<SpreadResult>({
    kind: 'spread',
    urls: s.replicas.map((cw) => cw.url),
    principalHeader: PRINCIPAL_HEADER,
    prefix,
    clientCapabilities: s.caps,
    concurrency: CONCURRENCY,
    ...range,
  });
  const f1 = await s.monitor.fence();
  const after = await s.redis.commands();
  const step: ScaleStep = {
    requests: r.sent,
    ok: r.ok,
    errors: r.errors,
    seconds: r.seconds,
    sent: s.monitor.between(f0, f1, r.sent),
    executed: delta(before, after, r.sent),
  };
  if (r.firstError) step.firstError = r.firstError;
  return step;
}

const names = (byName: Record<string, number>, limit = 6) =>
  Object.entries(byName)
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');

const errs = (st: ScaleStep) => (st.errors > 0 ? ` ERRORS ${st.errors}/${st.requests} (${st.firstError})` : '');

/** What the bench says of one step: commands sent per operation (less what `own` leaves out), then executed. */
function stepLine(st: ScaleStep, own: boolean, unit: string): string {
  const d: SentDelta = st.sent;
  const bg = own ? `less ${d.beats} beats, ${d.lastUse} last-use, ${d.sweep} sweep` : `less ${d.beats} beats`;
  return (
    `${st.ok}/${st.requests} in ${st.seconds.toFixed(1)} s; ` +
    `sent ${(own ? d.ownPerOp : d.perOp).toFixed(3)} cmds/${unit} (${bg}; ${names(d.byName)}); ` +
    `executed ${st.executed.perOp.toFixed(2)} (${names(st.executed.byName)})${errs(st)}`
  );
}

async function runOne(
  env: ScaleEnv,
  phase: ScaleRun['phase'],
  sessions: number,
  replicaCount: number,
): Promise<ScaleRun> {
  const { say, logDir } = env;
  const t0 = Date.now();
  const extra = extraSettings();
  const caps = jsonEnv('BENCH_SCALE_CAPS');
  const tag = `${phase}-${sessions}`;
  let redis: SharedRedis | undefined;
  let upstream: Upstream | undefined;
  let monitor: RedisMonitor | undefined;
  const replicas: Proxy[] = [];
  try {
    redis = await sharedRedis(phase, join(logDir, `${tag}-redis`), logDir);
    upstream = await startUpstream('sdk', logDir, TOOLS);
    const init0 = (await upstreamStats(upstream)).initializeCount;
    const settings: Record<string, string | number> = {
      'store.kind': 'redis',
      ...redis.settings,
      // Every replica of the phase seals requestState under the same key (required with Redis).
      'mrtr.stateKeys': randomBytes(32).toString('base64'),
      'principal.mode': 'header',
      'principal.hashSecret': 'causeway-bench-principal-secret',
      // Room for every principal in the shared idle index, first touches included.
      'store.maxSessions': Math.max(10_000, 2 * sessions),
      'log.level': 'warn',
      ...extra.pass,
    };
    // Started one after another: a replica starting grabs the 2 cores its neighbours would too.
    // Each replica's inspector on a loopback port: RSS is read right after a full collection there.
    const inspectPorts: number[] = [];
    for (let i = 0; i < replicaCount; i++) {
      inspectPorts.push(await freePort());
      replicas.push(
        await startCauseway(`causeway-${tag}-${i}`, upstream.url, settings, logDir, [
          `--inspect=127.0.0.1:${inspectPorts[i]}`,
        ]),
      );
    }
    /** Each replica's RSS as it is, then right after a full collection (what its sessions keep). */
    const rssNow = async () => {
      const raw = replicas.map((cw) => rssMb(cw.svc.pid));
      await Promise.all(inspectPorts.map(collectGarbage));
      return { raw, kept: replicas.map((cw) => rssMb(cw.svc.pid)) };
    };
    env.results.commands.push({ what: `Redis for ${tag}`, command: redis.command });
    env.results.commands.push({
      what: `Causeway replica (x${replicaCount}) for ${tag}`,
      command: cmd(replicas[0]!.svc.command, logDir),
    });
    say(
      `  ${tag}: ${redis.label}, ${replicaCount} replicas, SDK upstream with ${upstream.toolCount} ` +
        `tools${extra.skipped.length ? `; settings not in this build, left out: ${extra.skipped.join(', ')}` : ''}`,
    );
    monitor = await RedisMonitor.open(redis.nodes);
    const stage: Stage = { env, redis, monitor, replicas, caps, prefix: `${tag}-principal-` };

    // First, a tenth as many new sessions as the fill will open (at least 300), then as many calls
    // as the fill will make on a few principals (each always on the same replica): the cold and
    // warm paths compiled and the heap grown to what serving that load takes, so the RSS baseline
    // is a replica that has done the same work, and what the fill adds is what its sessions keep.
    const warmCold = Math.max(300, Math.round(sessions / 10));
    const opened = await pass(stage, { first: 0, end: warmCold, step: 1, shift: 0 }, `${tag}-warmcold-`);
    if (opened.ok !== warmCold) throw new Error(`warm-up session failed: ${opened.firstError}`);
    const warmPrincipals = CONCURRENCY - (CONCURRENCY % replicaCount) || replicaCount;
    const warmup = await pass(
      stage,
      { first: 0, end: sessions, step: 1, shift: 0, principals: warmPrincipals },
      `${tag}-warmup-`,
    );
    if (warmup.ok !== sessions) throw new Error(`warm-up request failed: ${warmup.firstError}`);
    const rssBefore = await rssNow();
    const pooledBefore = await Promise.all(replicas.map(pooledSessions));

    const fill = await pass(stage, { first: 0, end: sessions, step: 1, shift: 0 });
    say(`  ${tag} fill (cold sessions): ${stepLine(fill, false, 'session')}`);
    const sample = Math.min(FIRST_TOUCH, sessions);
    const step = Math.max(1, Math.floor(sessions / sample));
    // Principal i opened its session on replica i mod n; shift 1 sends it to the next one.
    const firstTouch = await pass(stage, { first: 0, end: step * sample, step, shift: 1 });
    say(`  ${tag} first touch on another replica: ${stepLine(firstTouch, false, 'touch')}`);
    const warm =
      phase === 'scale-cluster' ? await pass(stage, { first: 0, end: sessions, step: 1, shift: 0 }) : undefined;
    if (warm) say(`  ${tag} warm calls (same replica): ${stepLine(warm, true, 'call')}`);

    await sleep(SETTLE_MS);
    const i0 = await redis.commands();
    const m0 = await monitor.fence();
    const w0 = Date.now();
    await sleep(IDLE_MS);
    const m1 = await monitor.fence();
    const idleSeconds = (Date.now() - w0) / 1000;
    const i1 = await redis.commands();
    const idleExecuted = delta(i0, i1, idleSeconds);
    const idleSent = monitor.between(m0, m1, idleSeconds);
    const top = Object.entries(idleSent.byKey)
      .sort((a, b) => b[1] - a[1])
      .map(([name, n]) => ({ name, perSecond: n / idleSeconds }));

    const pooledAfter = await Promise.all(replicas.map(pooledSessions));
    const rssAfter = await rssNow();
    const replicaStats: ScaleReplica[] = replicas.map((cw, i) => {
      const fromMetrics = pooledBefore[i] !== undefined && pooledAfter[i] !== undefined;
      const held = fromMetrics ? pooledAfter[i]! - pooledBefore[i]! : sessions / replicaCount;
      const rssAfterMb = rssAfter.kept[i]!;
      return {
        name: cw.name,
        sessions: held,
        sessionsFrom: fromMetrics ? 'metrics' : 'estimate',
        rssBeforeMb: rssBefore.kept[i]!,
        rssAfterMb,
        rssPerSessionKb: held > 0 ? ((rssAfterMb - rssBefore.kept[i]!) * 1024) / held : NaN,
        rawRssPerSessionKb: held > 0 ? ((rssAfter.raw[i]! - rssBefore.raw[i]!) * 1024) / held : NaN,
        upstreamSockets: socketsTo(cw.svc.pid, upstream!.port),
      };
    });
    const up = await upstreamStats(upstream);
    const run: ScaleRun = {
      phase,
      redis: redis.label,
      sessions,
      replicas: replicaCount,
      concurrency: CONCURRENCY,
      upstreamTools: upstream.toolCount,
      clientCapabilities: caps,
      extraSettings: extra.pass,
      skippedSettings: extra.skipped,
      fill,
      firstTouch,
      idle: {
        settleMs: SETTLE_MS,
        seconds: idleSeconds,
        sent: idleSent,
        perSecond: idleSent.total / idleSeconds,
        top,
        executed: idleExecuted,
        executedPerSecond: idleExecuted.total / idleSeconds,
      },
      replicaStats,
      upstream: {
        initialize: up.initializeCount - init0,
        sessionsOpen: up.sessionsOpen,
        getStreamsOpen: up.getStreamsOpen,
      },
      wallSeconds: (Date.now() - t0) / 1000,
    };
    if (warm) run.warm = warm;
    const ps = (n: number) => (n / idleSeconds).toFixed(1);
    say(
      `  ${tag} idle ${idleSeconds.toFixed(1)} s: sent ${run.idle.perSecond.toFixed(1)} cmds/s ` +
        `(beats ${ps(idleSent.beats)}/s, last-use ${ps(idleSent.lastUse)}/s, sweep ${ps(idleSent.sweep)}/s; ` +
        `${top
          .slice(0, 5)
          .map((t) => `${t.name} ${t.perSecond.toFixed(1)}/s`)
          .join(', ')}); ` +
        `executed ${run.idle.executedPerSecond.toFixed(1)} cmds/s`,
    );
    for (const r of replicaStats) {
      say(
        `  ${r.name}: ${r.sessions} sessions (${r.sessionsFrom}), RSS after a full ` +
          `collection ${r.rssBeforeMb.toFixed(1)} -> ${r.rssAfterMb.toFixed(1)} MB ` +
          `= ${r.rssPerSessionKb.toFixed(1)} KB/session (${(r.rawRssPerSessionKb ?? NaN).toFixed(1)} ` +
          `KB without the collection), ${r.upstreamSockets} sockets to the upstream`,
      );
    }
    say(
      `  ${tag} upstream: ${run.upstream.initialize} initialize, ${up.sessionsOpen ?? '?'} ` +
        `sessions open, ${up.getStreamsOpen ?? '?'} GET streams open; ${run.wallSeconds.toFixed(0)} s`,
    );
    return run;
  } finally {
    // Nothing is measured from here on: no need for a graceful drain.
    await Promise.all(replicas.map((cw) => cw.svc.stop('SIGKILL')));
    await upstream?.svc.stop('SIGKILL');
    monitor?.close();
    await redis?.stop();
  }
}

/** `scale` (one redis-server, 3 replicas, each BENCH_SCALE_SESSIONS count) or `scale-cluster`. */
export async function scaleRun(env: ScaleEnv, phase: ScaleRun['phase']): Promise<void> {
  const counts = phase === 'scale' ? SESSIONS : [CLUSTER_SESSIONS];
  const replicas = phase === 'scale' ? REPLICAS : CLUSTER_REPLICAS;
  env.say(
    `${phase}: idle pooled sessions across ${replicas} replicas ` +
      `sharing ${phase === 'scale' ? 'one Redis' : 'a Redis Cluster'}, ${counts.join(', ')} principals`,
  );
  env.results.scale ??= [];
  for (const sessions of counts) {
    try {
      env.results.scale.push(await runOne(env, phase, sessions, replicas));
    } catch (err) {
      const msg = (err as Error).message.split('\n')[0]!;
      env.say(`  ${phase} with ${sessions} sessions failed: ${msg}`);
      env.results.scale.push({ phase, sessions, error: msg });
    }
  }
}
