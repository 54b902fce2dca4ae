// Redis Cluster failover under load, with real processes: three primaries with a replica each,
// made by redis-cli --cluster create; two Causeway replicas use it as store.redisCluster. While
// warm calls, cold keys crossing replicas, multi-round calls crossing replicas and a listen stream
// on each replica run, the primary of the idle index's slot (every new session writes there) is
// SIGKILLed; once its replica is promoted and the cluster is ok again, Causeway carries on.

import t from 'tap';
import { startCluster } from '../helpers/redis.js';
import { assertRecovered, runFailover } from './ha-load.js';

const PREFIX = 'causeway:';

t.test('cluster-slot-primary-killed-under-load-replica-promoted-causeway-carries-on', async (t) => {
  const cluster = await startCluster(t);
  t.teardown(() => cluster.stop());
  const idleKey = `${PREFIX}idle`;
  const victim = await cluster.primaryOf(idleKey, cluster.nodes[0]!);
  t.ok(victim, 'a primary serves the idle index');
  const victimNode = cluster.nodes.find((n) => n.port === victim!.port)!;
  const heir = (await cluster.view(cluster.nodes[0]!)).find((v) => v.primaryId === victim!.id);
  t.ok(heir, 'and has a replica');
  const witness = cluster.nodes.find((n) => n.port !== victim!.port && n.port !== heir!.port)!;
  const report = await runFailover(t, {
    store: { 'store.redisCluster': cluster.addrs.join(','), 'store.keyPrefix': PREFIX },
    kill: () => victimNode.kill(),
    // The replica serves the slot as a primary and the cluster says ok, seen from a third node.
    promoted: async () => {
      const now = await cluster.primaryOf(idleKey, witness);
      return now?.port === heir!.port && /cluster_state:ok/.test(String(await witness.admin.call('CLUSTER', 'INFO')));
    },
  });
  assertRecovered(t, 'cluster', report);
});
