// Replica liveness on a private Redis: one beat per replica, whatever it holds. A replica that
// stops beating lapses after its TTL and the others hear of it once; one that closes lapses at
// once; one whose own liveness lapsed (it beat too late) is told so, to claim back what it held;
// a Redis restart that forgot every replica tells each of them the same.

import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { ReplicaLiveness } from '../../src/bus/index.js';
import { createLogger } from '../../src/log.js';
import { createRedisClient } from '../../src/pool/index.js';
import { startRedis } from '../helpers/redis.js';

const log = createLogger('silent');
const redis = await startRedis(t);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits for a condition with no deadline of its own: the test's timeout is the only one. */
const until = async (cond: () => boolean) => {
  while (!cond()) await sleep(10);
};

interface Beating {
  liveness: ReplicaLiveness;
  lapsed: string[];
  resumed: number;
  client: Redis;
}

async function replica(key: string, ttlMs: number, beatMs: number): Promise<Beating> {
  const client = createRedisClient({ url: redis.url, commandTimeoutMs: 1000 }) as Redis;
  client.on('error', () => undefined);
  await new Promise((r) => client.once('ready', r));
  const liveness = new ReplicaLiveness(client, { key, replicaId: randomUUID(), ttlMs, beatMs }, log);
  const b: Beating = { liveness, lapsed: [], resumed: 0, client };
  liveness.on({ lapsed: (r) => b.lapsed.push(...r), resumed: () => (b.resumed += 1) });
  t.teardown(async () => {
    await liveness.close();
    client.disconnect();
  });
  await liveness.start();
  return b;
}

t.test('a replica that stops beating lapses, and every other hears of it once', async (t) => {
  const [a, b, c] = await Promise.all([replica('t1:replicas', 1500, 250), replica('t1:replicas', 1500, 250), replica('t1:replicas', 1500, 250)]);
  await sleep(1000);
  t.same([a.lapsed, b.lapsed], [[], []], 'nobody lapses while all beat');
  c.client.disconnect();
  await until(() => a.lapsed.length > 0 && b.lapsed.length > 0);
  t.same(a.lapsed, [c.liveness.replicaId]);
  t.same(b.lapsed, [c.liveness.replicaId]);
  t.ok(a.liveness.isLapsed(c.liveness.replicaId));
  await sleep(600);
  t.same(a.lapsed, [c.liveness.replicaId], 'told once');
  t.equal(a.resumed + b.resumed, 0, 'the live ones were never taken for lapsed');
});

t.test('a replica that closes lapses at once: the others hear of it on their next beat, not after its TTL', async (t) => {
  const a = await replica('t2:replicas', 60_000, 50);
  const b = await replica('t2:replicas', 60_000, 50);
  await b.liveness.close();
  await until(() => a.lapsed.includes(b.liveness.replicaId));
  t.pass('heard well before the one-minute TTL');
});

t.test('a replica that beat too late is told its own liveness lapsed', async (t) => {
  // Beats every 500 ms with a 100 ms TTL: each beat finds the replica's own liveness lapsed.
  const late = await replica('t3:replicas', 100, 500);
  await until(() => late.resumed > 0);
  t.notOk(late.liveness.lapsed().includes(late.liveness.replicaId), 'never counts itself among the lapsed');
});

t.test('a Redis that forgot the replicas tells each of them', async (t) => {
  const a = await replica('t4:replicas', 1500, 50);
  await sleep(100);
  t.equal(a.resumed, 0);
  await redis.admin.del('t4:replicas');
  await until(() => a.resumed > 0);
  t.pass('told after the key was lost');
});
