// Builds the SessionStore the config asks for: memory (default, one replica) or Redis (shared).

import type { Config } from '../../config/index.js';
import type { Logger } from '../../log.js';
import { MemorySessionStore } from './memory-store.js';
import { createRedisClient, describeConnection, readCa, type RedisConnectionOptions } from '../../bus/index.js';
import { RedisSessionStore } from './redis-store.js';
import type { SessionStore } from './session-store.js';

/**
 * A record outlives store.idleTtlMs by this much in Redis, so the idle sweep (which sends DELETE upstream) normally
 * comes first.
 */
export function recordTtlMs(idleTtlMs: number): number {
  return idleTtlMs + Math.max(30_000, Math.round(idleTtlMs / 10));
}

export function redisConnection(store: Config['store']): RedisConnectionOptions {
  return {
    url: store.redisUrl,
    username: store.redisUsername,
    password: store.redisPassword,
    tlsCa: readCa(store.redisTlsCaFile),
    sentinels: store.redisSentinels,
    sentinelName: store.redisSentinelName,
    sentinelPassword: store.redisSentinelPassword,
    cluster: store.redisCluster,
    commandTimeoutMs: store.redisCommandTimeoutMs,
  };
}

/** Throws (with a `store.*` message) when the Redis settings cannot work. */
export function createStore(config: Config, log: Logger): SessionStore {
  if (config.store.kind !== 'redis') return new MemorySessionStore();
  const connection = redisConnection(config.store);
  const client = createRedisClient(connection);
  const where = describeConnection(connection);
  return new RedisSessionStore(
    client,
    { keyPrefix: config.store.keyPrefix, recordTtlMs: recordTtlMs(config.store.idleTtlMs) },
    log,
    where,
  );
}

/** Waits (bounded) for a shared store to connect; a memory store is ready at once. False: carry on replica-local. */
export async function storeReady(store: SessionStore, timeoutMs: number): Promise<boolean> {
  return store.ready?.(timeoutMs) ?? true;
}
