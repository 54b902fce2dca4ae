export { cacheQuery, isCacheable, CACHEABLE_METHODS, type CacheQuery } from './keys.js';
export { GatewayCache, type Fill, type GatewayCacheOptions, type Keep } from './gateway-cache.js';
export type { Entry } from './memory-tier.js';
export { RedisTier } from './redis-tier.js';
export { NameCatalog, NAMING_LISTS } from './catalog.js';
export { UpstreamCache, type LegacySession } from './upstream-cache.js';
