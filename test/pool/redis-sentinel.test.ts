// Redis Sentinel failover under load, with real processes: a primary, its replica and three
// Sentinels; two Causeway replicas found the primary through the Sentinels. While warm calls,
// cold keys crossing replicas, multi-round calls crossing replicas and a listen stream on each
// replica run, the primary is SIGKILLed; once Sentinel has promoted the replica, Causeway carries
// on: nothing started after it recovered fails, and only requests in flight during the failover may.

import type { Redis } from 'ioredis';
import t from 'tap';
import { createRedisClient } from '../../src/pool/index.js';
import { startSentinelSet } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { assertRecovered, runFailover } from './ha-load.js';

t.test('sentinel-primary-killed-under-load-replica-promoted-causeway-carries-on', async (t) => {
  const set = await startSentinelSet(t);
  t.teardown(() => set.stop());
  t.equal(await set.masterPort(), set.primary.port, 'the Sentinels name the primary');
  const report = await runFailover(t, {
    store: { 'store.redisSentinels': set.sentinelAddrs.join(','), 'store.redisSentinelName': set.name },
    kill: () => set.primary.kill(),
    // Every Sentinel names the replica, and the replica says it is a primary now.
    promoted: async () => {
      for (let i = 0; i < set.sentinels.length; i++) if ((await set.masterPort(i)) !== set.replica.port) return false;
      return /role:master/.test(await set.replica.admin.info('replication'));
    },
  });
  assertRecovered(t, 'sentinel', report);
});

// When the primary dies, the socket closes first and ioredis starts reconnecting; the failover
// detector of the old connection then hears +switch-master and cancels the connect under way,
// and ioredis ends the client for good. That lands only when the message arrives while a
// Sentinel is being asked (a few ms per retry), so here the detector's step (connector.disconnect,
// ioredis internals) is taken at the start of the first reconnect, every time.
t.test('sentinel-client-ended-by-a-switch-master-mid-reconnect-connects-again', async (t) => {
  const set = await startSentinelSet(t);
  t.teardown(() => set.stop());
  const client = createRedisClient({
    url: 'redis://ignored:1',
    sentinels: set.sentinelAddrs,
    sentinelName: set.name,
    commandTimeoutMs: 500,
  }) as Redis;
  client.on('error', () => undefined);
  t.teardown(() => client.disconnect());
  await until(() => client.status === 'ready', { what: 'the client ready', timeoutMs: 15_000 });
  let ended = 0;
  client.on('end', () => ended++);
  client.once('connecting', () => (client as unknown as { connector: { disconnect(): void } }).connector.disconnect());
  await set.primary.kill();
  await until(async () => (await set.masterPort()) === set.replica.port, {
    what: 'the replica promoted',
    timeoutMs: 30_000,
    everyMs: 100,
  });
  const started = Date.now();
  const writing = await until(() => client.set('k', 'v').then(() => true), {
    what: 'the client writing to the new primary',
    timeoutMs: 20_000,
    everyMs: 200,
  }).then(
    () => true,
    () => false,
  );
  t.comment(
    `ended by ioredis ${ended} time(s); writing again ${writing} ` +
      `(${Date.now() - started} ms after the promotion was seen)`,
  );
  t.equal(ended, 1, 'ioredis ended the client (the race took place)');
  t.ok(writing, 'and it connected again, to the new primary');
});
