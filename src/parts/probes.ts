// The replica-wide levels the metrics read at scrape time, from parts built after the metrics
// themselves (every part records into them): `of` is called only once all of them exist.

import type { GatewayCache } from '../cache/index.js';
import type { Topology } from '../config/index.js';
import type { Probes } from '../metrics/index.js';
import type { HeldCalls } from '../mrtr/index.js';
import type { SessionPool } from '../pool/index.js';
import type { Federation } from '../routing/index.js';
import type { Subscriptions } from '../subscriptions/index.js';
import type { TaskBridge } from '../tasks/index.js';
import type { Traffic } from '../status/index.js';

export interface Probed {
  held: HeldCalls;
  subscriptions: Subscriptions;
  tasks: TaskBridge;
  federations: readonly Federation[];
  /** The data port: client connections open now. */
  ingress: { readonly openConnections: number };
  inFlight: { readonly count: number };
  pool: SessionPool;
  cache: GatewayCache | undefined;
  /** The status page's counts, whose clients the client metric reads. */
  traffic: Traffic;
}

export function probesOf(topology: () => Topology, of: () => Probed): Probes {
  return {
    pendingCalls: () => of().held.size,
    listenStreams: () => of().subscriptions.size,
    tasksFollowed: () => of().tasks.followedCount,
    federationConflicts: () => of().federations.map((f) => [f.path, f.conflictCount]),
    openConnections: () => of().ingress.openConnections,
    inFlight: () => of().inFlight.count,
    pooledSessions: () => {
      const counts = of().pool.sizeByUpstream();
      return topology().upstreams.map((u): [string, number] => [u.name, counts.get(u.name) ?? 0]);
    },
    storeUp: () => of().pool.storeUp,
    cacheBytes: () => of().cache?.bytesBy() ?? [],
    clients: () =>
      of()
        .traffic.clientRows()
        .map((c): [string, string, string, number] => [c.name, c.version, c.revision, c.requests]),
  };
}
