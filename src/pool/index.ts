export { SessionPool, sessionRef, type PoolOptions, type PoolEvents } from './pool.js';
export type { PoolUpstream, OpenReason } from './opening.js';
export { MemorySessionStore } from './memory-store.js';
export { RedisSessionStore, createRedisClient, type RedisConnectionOptions, type RedisStoreOptions } from './redis-store.js';
export { createStore, storeReady, recordTtlMs, redisConnection } from './create-store.js';
export { sessionKey, upstreamOf, type DeclaredCapabilities, type SessionKey } from './session-key.js';
export { sameRecord, type SessionRecord, type SessionStore } from './session-store.js';
export { SessionFacts, type PooledSession } from './session-facts.js';
