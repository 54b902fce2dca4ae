// Redis Sentinel failover under load, with real processes: a primary, its replica and three
// Sentinels; two Causeway replicas found the primary through the Sentinels. While warm calls,
// cold keys crossing replicas, multi-round calls crossing replicas and a listen stream on each
// replica run, the primary is SIGKILLed; once Sentinel has promoted the replica, Causeway carries
// on: nothing started after it recovered fails, and at most the requests in flight at the kill do.

import t from 'tap';
import { startSentinelSet } from '../helpers/redis.js';
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
