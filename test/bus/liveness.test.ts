// Replica liveness on a private Redis: one beat per replica, whatever it holds. A replica that
// stops beating lapses after its TTL and the others hear of it once; one that closes lapses at
// once; one whose own liveness lapsed (it beat too late) is told so, to claim back what it held;
// a Redis restart that forgot every replica tells each of them the same; each beat reads the
// replicas live, for the status page. A replica settles while Redis is away and for its TTL after
// Redis is back, and is told once the window ended.

import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { ReplicaLiveness } from '../../src/bus/index.js';
import { createLogger } from '../../src/log.js';
import { createRedisClient } from '../../src/pool/index.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const log = createLogger('silent');
const redis = await startRedis(t);

interface Beating {
  liveness: ReplicaLiveness;
  lapsed: string[];
  resumed: number;
  /** Whether it was settling each time it was told `resumed`. */
  settlingOnResume: boolean[];
  settled: number;
  client: Redis;
}

async function replica(key: string, ttlMs: number, beatMs: number): Promise<Beating> {
  const client = createRedisClient({ url: redis.url, commandTimeoutMs: 1000 }) as Redis;
  client.on('error', () => undefined);
  await new Promise((r) => client.once('ready', r));
  const liveness = new ReplicaLiveness(client, { key, replicaId: randomUUID(), ttlMs, beatMs }, log);
  const b: Beating = { liveness, lapsed: [], resumed: 0, settlingOnResume: [], settled: 0, client };
  liveness.on({
    lapsed: (r) => b.lapsed.push(...r),
    resumed: () => {
      b.resumed += 1;
      b.settlingOnResume.push(liveness.settling);
    },
    settled: () => (b.settled += 1),
  });
  t.teardown(async () => {
    await liveness.close();
    client.disconnect();
  });
  await liveness.start();
  return b;
}

/**
 * Resolves once `b` has beaten `ms` (on Redis's clock) past its last beat, and once more after
 * that so the beat is fully read: proof that the time passed, where a sleep would only hope so.
 * Its liveness deadline in the sorted set moves on with every beat.
 */
async function beatenFor(key: string, b: Beating, ms: number): Promise<void> {
  const deadline = async () => Number(await redis.admin.zscore(key, b.liveness.replicaId));
  const from = await deadline();
  const past = await until(
    async () => {
      const now = await deadline();
      return now >= from + ms && now;
    },
    { what: `${ms} ms of beats` },
  );
  await until(async () => (await deadline()) > past, { what: 'one beat more' });
}

t.test('a replica that stops beating lapses, and every other hears of it once', async (t) => {
  const [a, b, c] = await Promise.all([
    replica('t1:replicas', 1500, 250),
    replica('t1:replicas', 1500, 250),
    replica('t1:replicas', 1500, 250),
  ]);
  await Promise.all([beatenFor('t1:replicas', a, 1000), beatenFor('t1:replicas', b, 1000)]);
  t.same([a.lapsed, b.lapsed], [[], []], 'nobody lapses while all beat');
  c.client.disconnect();
  await until(() => a.lapsed.length > 0 && b.lapsed.length > 0, { what: 'both to hear of the lapse' });
  t.same(a.lapsed, [c.liveness.replicaId]);
  t.same(b.lapsed, [c.liveness.replicaId]);
  t.ok(a.liveness.isLapsed(c.liveness.replicaId));
  await beatenFor('t1:replicas', a, 600);
  t.same(a.lapsed, [c.liveness.replicaId], 'told once');
  t.equal(a.resumed + b.resumed, 0, 'the live ones were never taken for lapsed');
});

t.test(
  'a replica that closes lapses at once: the others hear of it on their next beat, not after its TTL',
  async (t) => {
    const a = await replica('t2:replicas', 60_000, 50);
    const b = await replica('t2:replicas', 60_000, 50);
    await b.liveness.close();
    await until(() => a.lapsed.includes(b.liveness.replicaId), { what: 'the closed replica to lapse' });
    t.pass('heard well before the one-minute TTL');
  },
);

t.test('a replica that beat too late is told its own liveness lapsed', async (t) => {
  // Beats every 500 ms with a 100 ms TTL: each beat finds the replica's own liveness lapsed.
  const late = await replica('t3:replicas', 100, 500);
  await until(() => late.resumed > 0, { what: 'the late replica to be told' });
  t.notOk(late.liveness.lapsed().includes(late.liveness.replicaId), 'never counts itself among the lapsed');
});

t.test('a Redis that forgot the replicas tells each of them', async (t) => {
  const a = await replica('t4:replicas', 1500, 50);
  await beatenFor('t4:replicas', a, 100);
  t.equal(a.resumed, 0);
  await redis.admin.del('t4:replicas');
  await until(() => a.resumed > 0, { what: 'the replica to be told' });
  t.pass('told after the key was lost');
});

t.test('each beat reads the replicas live (the status page reads their parts) and tells its listeners', async (t) => {
  const a = await replica('t5:replicas', 60_000, 50);
  let beats = 0;
  a.liveness.on({ beat: () => (beats += 1) });
  const b = await replica('t5:replicas', 60_000, 50);
  const both = [a.liveness.replicaId, b.liveness.replicaId].sort();
  await until(() => [...a.liveness.live()].sort().join() === both.join(), { what: 'a to read both live' });
  t.ok(beats > 0, 'the beat listener hears each beat');
  await b.liveness.close();
  await until(() => a.liveness.live().join() === a.liveness.replicaId, { what: 'a to read b gone at once' });
  t.pass('a closed replica is no longer live');
});

t.test('a Redis restarted empty: the replica settles until its TTL passed after Redis is back', async (t) => {
  // Beats far apart: being told at once shows the connection's ready beat, not the timer's.
  const a = await replica('t6:settling', 1000, 60_000);
  t.notOk(a.liveness.settling, 'not settling while Redis answers');
  await redis.restart();
  await until(() => a.resumed > 0, { what: 'the replica to be told Redis forgot it' });
  t.same(a.settlingOnResume, [true], 'settling when told: its claims are being stated again');
  await until(() => a.settled > 0, { what: 'the settling window to end' });
  t.notOk(a.liveness.settling, 'settled');
  t.equal(a.settled, 1, 'told once');
});
