export { MemorySessionStore } from './memory-store.js';
export {
  RedisSessionStore,
  createRedisClient,
  type RedisConnectionOptions,
  type RedisStoreOptions,
} from './redis-store.js';
export { createStore, storeReady, recordTtlMs, redisConnection } from './create-store.js';
export { sameRecord, SharedResults, type SessionRecord, type SessionStore } from './session-store.js';
