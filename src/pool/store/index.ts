export { MemorySessionStore } from './memory-store.js';
export { RedisSessionStore, type RedisStoreOptions } from './redis-store.js';
export { createRedisClient, type RedisConnectionOptions } from '../../bus/index.js';
export { createStore, storeReady, recordTtlMs, redisConnection } from './create-store.js';
export { sameRecord, SharedResults, type SessionRecord, type SessionStore } from './session-store.js';
