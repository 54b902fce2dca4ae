export { SessionPool, sameRecord, type PooledSession, type PoolOptions, type PoolEvents } from './pool.js';
export { MemorySessionStore } from './memory-store.js';
export { RedisSessionStore, createRedisClient, type RedisConnectionOptions, type RedisStoreOptions } from './redis-store.js';
export { createStore, storeReady, recordTtlMs, redisConnection } from './create-store.js';
export { sessionKey, type SessionKey } from './session-key.js';
export type { SessionRecord, SessionStore } from './session-store.js';
