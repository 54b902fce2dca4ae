// What pooled sessions cost Redis, counted (never timed) with MONITOR on a private redis-server:
// three replicas share it in front of the SDK 1.32.2 fixture (which serves the session GET
// stream). A new session costs at most 4 commands, its first use on another replica at most 2,
// and idle sessions cost nothing per session: over a window, Redis hears each replica's liveness
// beat (its script, and the SET of its status page part) and nothing else, with sessions that hold their GET stream
// (clients that declared roots, once the upstream was seen asking outside a call: it asks its
// scout as soon as it can) as with sessions that do not, and the same with twice as many of them.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { rpc, sleep } from '../mrtr/wire.js';
import { metricValue } from '../helpers/metrics.js';
import { until } from '../helpers/until.js';

const PREFIX = 'idle:';
const TAKEOVER_MS = 3_000;
const BEAT_MS = TAKEOVER_MS / 3;
// One EVALSHA a beat (the commands it runs inside are Redis's, not sent) and one SET of the
// replica's status page part (status/cluster.ts).
const PER_BEAT = 2;

const redis = await startRedis(t);
const upstream = await startLegacyServer({ asksWhenStreamOpens: 'first' });
t.teardown(() => upstream.close());

/** Commands clients send (not those a script runs), as MONITOR shows them, by replica connection. */
class Monitor {
  readonly commands: Array<{ name: string; args: string[] }> = [];
  private constructor(private readonly conn: Redis) {}
  static async start(url: string): Promise<Monitor> {
    const admin = new Redis(url);
    const m = await admin.monitor();
    const monitor = new Monitor(m);
    m.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua' || args[0]?.toLowerCase() === 'info') return;
      monitor.commands.push({ name: args[0]!.toLowerCase(), args: args.slice(1) });
    });
    admin.disconnect();
    return monitor;
  }
  /** Commands since `from`, less the liveness beats (EVALSHA on P replicas, SET of P status:…). */
  since(from: number): Array<{ name: string; args: string[] }> {
    return this.commands.slice(from).filter((c) => !isBeat(c));
  }
  beats(from: number): number {
    return this.commands.slice(from).filter(isBeat).length;
  }
  get mark(): number {
    return this.commands.length;
  }
  stop(): void {
    this.conn.disconnect();
  }
}

const isBeat = (c: { name: string; args: string[] }) =>
  (c.name === 'evalsha' && c.args[2] === `${PREFIX}replicas`) ||
  (c.name === 'set' && c.args[0]!.startsWith(`${PREFIX}status:{status}:`));

const monitor = await Monitor.start(redis.url);
t.teardown(() => monitor.stop());

// One list of requestState keys for the three replicas (required with the Redis store).
const stateKeys = randomBytes(32).toString('base64');
const replicas = await Promise.all(
  [0, 1, 2].map(() =>
    spawnCauseway(
      {
        'upstream.url': upstream.url,
        'store.kind': 'redis',
        'store.redisUrl': redis.url,
        'store.keyPrefix': PREFIX,
        'mrtr.stateKeys': stateKeys,
        'principal.mode': 'header',
        'principal.hashSecret': 'idle-cost-secret',
        'subscriptions.takeoverMs': TAKEOVER_MS,
        'log.level': 'info',
      },
      { t },
    ),
  ),
);

const NO_ASKS = { elicitation: undefined } as Record<string, unknown>;
let principals = 0;
/**
 * Sessions opened for clients that declared roots: under upstream.standingStream=auto, once the upstream was seen
 * asking outside a call, theirs are the GET streams held (beside the upstream's scout's).
 */
let asking = 0;
/** One call on replica `r` for a principal new to every replica. */
async function newSession(r: number, caps: Record<string, unknown>): Promise<string> {
  const principal = `p-${++principals}`;
  if (caps.roots !== undefined) asking += 1;
  const reply = await rpc(
    replicas[r]!.url,
    'tools/call',
    { name: 'echo', arguments: { message: 'x' } },
    { caps, headers: { 'x-causeway-principal': principal } },
  );
  if (reply.status !== 200 || reply.body?.result?.content?.[0]?.text === undefined)
    throw new Error(`call failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return principal;
}

async function call(r: number, principal: string, caps: Record<string, unknown>): Promise<void> {
  const reply = await rpc(
    replicas[r]!.url,
    'tools/call',
    { name: 'echo', arguments: { message: 'y' } },
    { caps, headers: { 'x-causeway-principal': principal } },
  );
  if (reply.status !== 200) throw new Error(`call failed: ${reply.status}`);
}

/** Redis commands over a window of `beats` beat periods with no traffic, beats apart. */
async function idleWindow(beats: number): Promise<{ others: Array<{ name: string; args: string[] }>; beats: number }> {
  // Let what the last requests started (pub/sub subscriptions, the first holders' streams) settle.
  await sleep(2 * BEAT_MS);
  const from = monitor.mark;
  await sleep(beats * BEAT_MS);
  return { others: monitor.since(from), beats: monitor.beats(from) };
}

/**
 * The pool's batch of last uses (ZADD XX GT on an idle shard, PEXPIRE of a record): once per session used, up to a
 * touch interval after its use.
 */
const isLastUse = (c: { name: string; args: string[] }) =>
  (c.name === 'zadd' && c.args[1] === 'XX' && c.args[2] === 'GT') ||
  (c.name === 'pexpire' && c.args[0]!.startsWith(`${PREFIX}session:`));
/** The idle sweep's reads of the idle shards (ZRANGEBYSCORE, ZCARD): per replica and sweep, never per session. */
const isSweep = (c: { name: string; args: string[] }) =>
  (c.name === 'zrangebyscore' || c.name === 'zcard') && c.args[0]!.startsWith(`${PREFIX}idle:`);

t.test('a new session costs at most 4 Redis commands; its first use on another replica at most 2', async (t) => {
  // Once per replica, not per session: its first scripts are loaded, its first subscriptions made.
  for (const r of [0, 1, 2])
    for (const caps of [NO_ASKS, { roots: {} }]) await call((r + 1) % 3, await newSession(r, caps), caps);
  // Once per upstream: its scout's stream, asked on at once, teaches every replica to hold the asked sessions'.
  await until(
    async () => {
      const learned = await Promise.all(
        replicas.map((r) => metricValue(r.adminUrl, 'causeway_upstream_asks_outside_calls')),
      );
      return learned.every((n) => n === 1);
    },
    { what: 'every replica to learn that the upstream asks outside a call' },
  );
  // What a request sends, not the pool's batch of last uses, which runs on its own timer (every
  // replica's, for whatever sessions it used: the upstream's scout among them, kept in use on each tick).
  const sent = (mark: number) => monitor.since(mark).filter((c) => !isLastUse(c));
  for (const [caps, what] of [
    [NO_ASKS, 'a client that declared nothing to ask'],
    [{ roots: {} }, 'a client that declared roots (its GET stream is held)'],
  ] as const) {
    for (let i = 0; i < 5; i++) {
      const from = monitor.mark;
      const principal = await newSession(i % 3, caps);
      const cold = sent(from);
      t.ok(cold.length <= 4, `new session, ${what}: ${cold.length} commands (${cold.map((c) => c.name).join(' ')})`);
      const touched = monitor.mark;
      await call((i + 1) % 3, principal, caps);
      const first = sent(touched);
      t.ok(
        first.length <= 2,
        `first use on another replica, ${what}: ${first.length} ` + `commands (${first.map((c) => c.name).join(' ')})`,
      );
      const warm = monitor.mark;
      await call((i + 1) % 3, principal, caps);
      t.same(
        sent(warm).map((c) => c.name),
        [],
        'a warm call: none',
      );
    }
  }
});

t.test('idle sessions cost Redis the replicas’ beats and nothing else, however many there are', async (t) => {
  for (const round of [1, 2]) {
    const sessions = round * 30;
    for (let i = 0; i < 30; i++) await newSession(i % 3, i % 2 === 0 ? { roots: {} } : NO_ASKS);
    const w = await idleWindow(6);
    const lastUses = w.others.filter(isLastUse);
    const sweeps = w.others.filter(isSweep);
    const rest = w.others.filter((c) => !isLastUse(c) && !isSweep(c));
    t.same(
      rest.map((c) => `${c.name} ${c.args[0]}`),
      [],
      `${sessions} idle sessions: no command but beats, sweeps (${sweeps.length}) ` +
        `and the last uses of the round's requests (${lastUses.length})`,
    );
    // And the upstream's scout's, which each replica keeps in use.
    t.ok(
      lastUses.filter((c) => c.name === 'pexpire').length <= 30 + replicas.length,
      'at most one last use per session used',
    );
    t.ok(w.beats <= 3 * (6 + 2) * PER_BEAT, `${w.beats} beats from 3 replicas in 6 beat periods`);
  }
  await until(() => upstream.stats().getStreamsOpen === asking + 1, { what: 'the asked sessions’ streams' });
  t.equal(
    upstream.stats().getStreamsOpen,
    asking + 1,
    `one GET stream for each of the ${asking} sessions whose clients ` +
      `declared roots, and the scout's; none for the ${principals - asking} others`,
  );
});
