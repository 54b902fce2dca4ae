// Which upstreams ask outside a call, learned by one replica and known to all (a real
// redis-server, each "replica" an OutsideAskers with its own connection and RedisBus): the others
// hear it at once, a replica that starts later (or a reload that adds the upstream) reads it from Redis, and what a
// replica knows is written back when Redis came back empty. Without Redis the knowledge is the replica's own.

import t, { type Test } from 'tap';
import type { Redis } from 'ioredis';
import { RedisBus } from '../../src/bus/index.js';
import { createRedisClient } from '../../src/bus/redis-connection.js';
import { createLogger } from '../../src/log.js';
import { OutsideAskers } from '../../src/upstream/replicas/outside-askers.js';
import { startRedis, type RunningRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const log = createLogger('silent');
const PREFIX = 'askers-test:';

async function replica(t: Test, redis: RunningRedis, id: string, upstreams = ['up', 'other']) {
  const client = createRedisClient({ url: redis.url, commandTimeoutMs: 1000 }) as Redis;
  const bus = new RedisBus(createRedisClient({ url: redis.url, commandTimeoutMs: 1000 }));
  const askers = new OutsideAskers({ redis: client, bus, keyPrefix: PREFIX, replicaId: id, log });
  const heard: string[] = [];
  askers.onLearned((u) => heard.push(u));
  t.teardown(async () => {
    await askers.close();
    await bus.close();
    client.disconnect();
  });
  // Started at once, its connection perhaps not up yet, as the app starts it: the read waits for it.
  await askers.start(upstreams);
  return { askers, heard, client };
}

t.test('learned on one replica: the others hear it at once, a later one reads it', async (t) => {
  const redis = await startRedis(t);
  t.teardown(() => redis.stop());
  const a = await replica(t, redis, 'a');
  const b = await replica(t, redis, 'b');
  t.notOk(a.askers.has('up'));
  a.askers.learn('up');
  t.ok(a.askers.has('up'), 'known where it was learned, at once');
  t.same(a.heard, ['up'], 'told once');
  a.askers.learn('up');
  t.same(a.heard, ['up'], 'learning it again tells nobody');
  await until(() => b.askers.has('up'), { what: 'B to hear it' });
  t.same(b.heard, ['up']);
  t.notOk(b.askers.has('other'), 'only the upstream that asked');
  await until(async () => (await redis.admin.get(`${PREFIX}asks-outside:{up}`)) === '1', { what: 'kept in Redis' });
  t.ok((await redis.admin.ttl(`${PREFIX}asks-outside:{up}`)) > 24 * 3600, 'kept for days');

  const c = await replica(t, redis, 'c');
  await until(() => c.askers.has('up'), { what: 'a replica started later to read it at its start' });
  t.same(c.heard, ['up']);

  // An upstream this replica did not start with (a reload adds it) is read when it is adopted.
  const d = await replica(t, redis, 'd', ['other']);
  t.notOk(d.askers.has('up'), 'not read at start: not one of its upstreams');
  await until(() => d.client.status === 'ready', { what: "D's connection" });
  await d.askers.adopt('up');
  t.ok(d.askers.has('up'), 'read once adopted');
  t.same(d.heard, ['up']);
});

t.test('Redis restarted empty: a replica that knows writes it back', async (t) => {
  const redis = await startRedis(t);
  t.teardown(() => redis.stop());
  const a = await replica(t, redis, 'a');
  a.askers.learn('up');
  await until(async () => (await redis.admin.get(`${PREFIX}asks-outside:{up}`)) === '1', { what: 'kept in Redis' });
  await redis.kill();
  await redis.restart();
  // The bus resubscribes after the gap and reads again, writing back what this replica knows.
  await until(async () => (await redis.admin.get(`${PREFIX}asks-outside:{up}`).catch(() => null)) === '1', {
    what: 'the knowledge written back',
  });
  const later = await replica(t, redis, 'later');
  await until(() => later.askers.has('up'), { what: 'a replica started after it to read it' });
});

t.test('without Redis: this replica alone', async (t) => {
  const askers = new OutsideAskers();
  const heard: string[] = [];
  askers.onLearned((u) => heard.push(u));
  await askers.start(['up']);
  t.notOk(askers.has('up'));
  askers.learn('up');
  t.ok(askers.has('up'));
  t.same(heard, ['up']);
  await askers.close();
});
