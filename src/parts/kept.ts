// What the replica keeps, each part with its own start and close: the session store, the
// gateway cache (discover, lists and reads, kept per replica and the public ones in Redis too when
// asked), and the catalog of names the replicas' lists taught them.

import { GatewayCache, NameCatalog, RedisTier } from '../cache/index.js';
import { CacheMetrics, type Metrics } from '../metrics/index.js';
import type { SessionStore } from '../pool/index.js';
import type { CrossReplicaListen } from '../subscriptions/index.js';
import type { Logger } from '../log.js';
import type { Ground } from './registry.js';
import type { UpstreamParts } from './upstream-context.js';

export function storePart({ parts }: Ground, store: SessionStore): SessionStore {
  parts.onClose('store', () => store.close());
  return store;
}

export function cachePart(
  { parts, config, replicaId, log }: Ground,
  store: SessionStore,
  metrics: Metrics,
  crossReplica: CrossReplicaListen | undefined,
): GatewayCache | undefined {
  if (config.cache.maxBytes <= 0) return undefined;
  const redis = store.shared?.client;
  const cache = new GatewayCache({
    maxBytes: config.cache.maxBytes,
    replicaId,
    keyPrefix: config.store.keyPrefix,
    ...(config.cache.store === 'redis' && redis ? { shared: new RedisTier(redis, config.store.keyPrefix) } : {}),
    recorder: new CacheMetrics(metrics),
    log: log.child({ stage: 'cache' }),
  });
  // With Redis away at start-up, other replicas' invalidations are heard once it is back.
  const warning = "cannot hear the other replicas' cache invalidations yet";
  parts.onStart('replica-news', () =>
    cache.start(crossReplica?.messages).catch((err: unknown) => log.warn({ err }, warning)),
  );
  parts.onClose('cache', () => cache.close());
  return cache;
}

/** The names one replica's lists taught it, offered to the others (metrics labels). */
export function catalogPart(
  { parts, config, topology, replicaId, log }: Ground,
  store: SessionStore,
  crossReplica: CrossReplicaListen | undefined,
  upstreams: ReadonlyMap<string, UpstreamParts>,
): NameCatalog | undefined {
  const redis = store.shared?.client;
  if (!crossReplica || !redis) return undefined;
  const catalog = new NameCatalog({
    redis,
    bus: crossReplica.messages,
    keyPrefix: config.store.keyPrefix,
    replicaId,
    offer: (upstream, method, items) => upstreams.get(upstream)?.metrics.names.offer(method, items) ?? [],
    log: log.child({ stage: 'cache' }),
  });
  for (const [name, u] of upstreams) u.metrics.onLearned = learnedBy(catalog, name);
  const names = topology.upstreams.map((u) => u.name);
  const warning = 'cannot read the names other replicas learned yet';
  parts.onStart('replica-news', () => catalog.start(names).catch((err: unknown) => log.warn({ err }, warning)));
  parts.onClose('catalog', () => catalog.close());
  return catalog;
}

const learnedBy = (catalog: NameCatalog, name: string) => (method: string, items: readonly string[]) =>
  catalog.learned(name, method, items);

/** An upstream a reload added: the names its lists teach go to the catalog, and the others' are read. */
export function adoptInCatalog(catalog: NameCatalog, name: string, u: UpstreamParts, log: Logger): void {
  u.metrics.onLearned = learnedBy(catalog, name);
  catalog.adopt(name).catch((err: unknown) => log.warn({ err }, 'cannot read the names other replicas learned yet'));
}
