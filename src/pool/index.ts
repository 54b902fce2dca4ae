export { SessionPool, type PooledSession, type PoolOptions, type PoolEvents } from './pool.js';
export { MemorySessionStore } from './memory-store.js';
export { sessionKey, type SessionKey } from './session-key.js';
export type { SessionRecord, SessionStore } from './session-store.js';
