export { SessionPool, sessionRef, type PoolOptions, type PoolEvents } from './pool.js';
export type { PoolUpstream, OpenReason } from './opening.js';
export {
  MemorySessionStore,
  RedisSessionStore,
  createRedisClient,
  createStore,
  storeReady,
  recordTtlMs,
  redisConnection,
  sameRecord,
  type RedisConnectionOptions,
  type RedisStoreOptions,
  type SessionRecord,
  type SessionStore,
} from './store/index.js';
export {
  SCOUT_PRINCIPAL,
  scoutKey,
  sessionKey,
  upstreamOf,
  type DeclaredCapabilities,
  type SessionKey,
} from './session-key.js';
export { SessionFacts, type PooledSession } from './session-facts.js';
