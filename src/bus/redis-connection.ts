// The Redis connection every Redis-backed part of Causeway uses (session store, listen
// coordination, tasks, rate limits): one node, Sentinel or Cluster, failing fast instead of
// queueing, so that a Redis away costs a request its fallback, never a wait.

import { readFileSync } from 'node:fs';
import type { Redis, Cluster, RedisOptions, ClusterOptions } from 'ioredis';
import { ioredis } from './ioredis.js';

export interface RedisConnectionOptions {
  /** redis://[user:password@]host:port[/db] or rediss:// (TLS). Host and port ignored with sentinels or cluster. */
  url: string;
  username?: string;
  password?: string;
  /** PEM text of extra CAs for TLS. */
  tlsCa?: string;
  sentinels?: string[];
  sentinelName?: string;
  sentinelPassword?: string;
  cluster?: string[];
  /** Per command; 0 disables the timeout. */
  commandTimeoutMs: number;
}

export type RedisClient = Redis | Cluster;

/**
 * A script (one key; ARGV token) that deletes its key while it holds the token, so that a lock or
 * a lease is released by its holder only: 1 when deleted, 0 when another holds it or none does.
 */
export const COMPARE_AND_DELETE = {
  keys: 1,
  lua: `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
} as const;

const RETRY_CAP_MS = 1000;

/** host:port (or [v6]:port) -> {host, port}. */
export function parseHostPort(s: string, defaultPort: number): { host: string; port: number } {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(s.trim()) ?? /^([^:]+)(?::(\d+))?$/.exec(s.trim());
  if (!m) throw new Error(`not host:port: ${s}`);
  return { host: m[1]!, port: m[2] ? Number(m[2]) : defaultPort };
}

/** Where a client connects, safe for logs (no credentials). */
export function describeConnection(c: RedisConnectionOptions): string {
  if (c.cluster?.length) return `cluster ${c.cluster.join(',')}`;
  if (c.sentinels?.length) return `sentinel ${c.sentinelName ?? 'mymaster'}@${c.sentinels.join(',')}`;
  const u = parseUrl(c.url);
  return `${u.protocol}//${u.host}`;
}

function parseUrl(url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new Error('store.redisUrl: expected redis://[user:password@]host:port[/db] or rediss://…');
  }
}

/** An ioredis client (single node, Sentinel or Cluster) that fails fast instead of queueing. */
export function createRedisClient(c: RedisConnectionOptions): RedisClient {
  if (c.cluster?.length && c.sentinels?.length)
    throw new Error('store.redisSentinels and store.redisCluster exclude each other');
  const u = parseUrl(c.url);
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new Error('store.redisUrl: must be redis:// or rediss://');
  const tls = u.protocol === 'rediss:' ? (c.tlsCa ? { ca: c.tlsCa } : {}) : undefined;
  const username = c.username || decodeURIComponent(u.username) || undefined;
  const password = c.password || decodeURIComponent(u.password) || undefined;
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new Error('store.redisUrl: the path must be a database number');
  const common: RedisOptions = {
    username,
    password,
    tls,
    commandTimeout: c.commandTimeoutMs > 0 ? c.commandTimeoutMs : undefined,
    connectTimeout: Math.max(1000, Math.min(5000, c.commandTimeoutMs * 4 || 5000)),
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    // A failover leaves us talking to a replica: reconnect (Sentinel then finds the new master).
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  };
  if (c.cluster?.length) {
    if (db !== 0) throw new Error('store.redisUrl: Redis Cluster has only database 0');
    const options: ClusterOptions = {
      enableOfflineQueue: false,
      clusterRetryStrategy: (times) => Math.min(times * 100, RETRY_CAP_MS),
      slotsRefreshTimeout: Math.max(1000, c.commandTimeoutMs * 4),
      redisOptions: common,
      // TLS certificates name the nodes as announced, not as resolved.
      ...(tls
        ? { dnsLookup: (address: string, cb: (err: Error | null, address: string) => void) => cb(null, address) }
        : {}),
    };
    return new (ioredis().Cluster)(
      c.cluster.map((n) => parseHostPort(n, 6379)),
      options,
    );
  }
  const retryStrategy = (times: number) => Math.min(times * 100, RETRY_CAP_MS);
  if (c.sentinels?.length) {
    return reconnectWhenEnded(
      new (ioredis().Redis)({
        ...common,
        db,
        sentinels: c.sentinels.map((n) => parseHostPort(n, 26379)),
        name: c.sentinelName || 'mymaster',
        sentinelPassword: c.sentinelPassword || undefined,
        sentinelRetryStrategy: retryStrategy,
        sentinelCommandTimeout: c.commandTimeoutMs > 0 ? c.commandTimeoutMs : undefined,
        enableTLSForSentinelMode: tls !== undefined,
        sentinelTLS: tls,
        // Subscribe to +switch-master so a failover is followed at once, not at the next error.
        failoverDetector: true,
        retryStrategy,
      }),
    );
  }
  return new (ioredis().Redis)({
    ...common,
    db,
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    retryStrategy,
  });
}

/**
 * A Sentinel client that connects again when ioredis gives up on it. The failover detector of
 * the previous connection cancels the connect under way when +switch-master arrives while the
 * client is reconnecting (the primary was killed, so the socket had closed first); ioredis then
 * ends the client for good ("Connection is closed."), and Causeway would stay replica-local until
 * restarted. An end we did not ask for (disconnect() or quit()) is followed by connect() after
 * RETRY_CAP_MS, for this client and for its duplicates (RedisBus's subscriber).
 */
function reconnectWhenEnded(client: Redis): Redis {
  let closing = false;
  const { disconnect, quit, duplicate } = client;
  client.disconnect = (reconnect = false) => {
    if (!reconnect) closing = true;
    disconnect.call(client, reconnect);
  };
  client.quit = ((...args: Parameters<Redis['quit']>) => {
    closing = true;
    return quit.apply(client, args);
  }) as Redis['quit'];
  client.duplicate = (override?: Partial<RedisOptions>) => reconnectWhenEnded(duplicate.call(client, override));
  client.on('end', () => {
    if (closing) return;
    setTimeout(() => {
      if (!closing && client.status === 'end') client.connect().catch(() => undefined);
    }, RETRY_CAP_MS).unref();
  });
  return client;
}

/** Reads a CA file for createRedisClient. */
export function readCa(file: string): string | undefined {
  if (!file) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`store.redisTlsCaFile: cannot read ${file}: ${(err as Error).message}`);
  }
}
