// SessionStore on Redis (ioredis): what lets every replica use an upstream session any replica
// opened. Key layout, with P the key prefix (store.keyPrefix, default "causeway:") and ID the
// session key id (upstream|principal hash|capability fingerprint; never a raw principal):
//
//   P session:{ID}  hash    key, sessionId (absent for sessionless upstreams), target (upstream URL),
//                           protocolVersion, initializeResult (JSON), createdAt, lastUsedAt (as written), generation.
//                           PEXPIRE recordTtlMs (a bit above store.idleTtlMs), refreshed by touch.
//   P lock:{ID}     string  owner token of the replica opening or replacing the session; PX lockTtl.
//   P rate:{K}      hash    tokens, at: the limits.rate* token bucket of principal hash K; PEXPIRE until full again.
//   P grant:{K}     string  a user's own upstream token, sealed (upstream/sign-in.ts), for upstream|principal hash K; PX its life.
//   P idle          zset    member ID, score last use (epoch ms). The authority on lastUsedAt:
//                           touch moves it forward (ZADD XX GT); idle() and count() read it.
//
// {ID} is the Cluster hash tag, so a record and its lock share a slot and every script touches one
// slot. The idle index is a single key written beside the scripts (never inside them), so in a
// race it can briefly disagree with the records: idle() drops members whose record is gone, and a
// record missing from the index still dies by its TTL.
//
// Every command has a timeout and nothing is queued while Redis is away (enableOfflineQueue
// false): a failing command rejects at once and the pool carries on with replica-local sessions.

import { readFileSync } from 'node:fs';
import { Redis, Cluster, type RedisOptions, type ClusterOptions } from 'ioredis';
import type { JsonObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import type { SessionRecord, SessionStore } from './session-store.js';

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

export interface RedisStoreOptions {
  keyPrefix: string;
  /** Redis TTL of a record, refreshed by touch. */
  recordTtlMs: number;
}

export type RedisClient = Redis | Cluster;

interface Scripts {
  cwInsert(key: string, ttl: number, ...fields: string[]): Promise<string[]>;
  cwReplace(key: string, expected: number, ttl: number, ...fields: string[]): Promise<string[]>;
  cwRemove(key: string, generation: number): Promise<number>;
  cwLock(key: string, owner: string, ttl: number): Promise<number>;
  cwUnlock(key: string, owner: string): Promise<number>;
  cwTake(key: string, ratePerSecond: number, burst: number): Promise<number>;
}

/** Lua sources, exported so tests can recognise them by SHA. Each touches one key (one slot). */
export const SCRIPTS = {
  // Stores the record unless one exists; returns the existing one (HGETALL) or {} when stored.
  cwInsert: `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HGETALL', KEYS[1]) end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {}`,
  // Compare-and-set on generation: replaces while the stored generation is ARGV[1] (or none is stored).
  cwReplace: `
local g = redis.call('HGET', KEYS[1], 'generation')
if g and tonumber(g) ~= tonumber(ARGV[1]) then return redis.call('HGETALL', KEYS[1]) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {}`,
  // Compare-and-delete on generation.
  cwRemove: `
local g = redis.call('HGET', KEYS[1], 'generation')
if g and tonumber(g) == tonumber(ARGV[1]) then redis.call('DEL', KEYS[1]) return 1 end
return 0`,
  // SET NX PX with an owner token; the owner may renew its own lock.
  cwLock: `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
return 0`,
  // Compare-and-delete on the owner token.
  cwUnlock: `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
  // Token bucket on Redis's own clock (replicas' clocks differ): 0 when a token was taken, else the
  // ms until one is due. Kept no longer than the bucket needs to fill again.
  cwTake: `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or burst
local at = tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) * 1000 / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return wait`,
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
  if (c.cluster?.length && c.sentinels?.length) throw new Error('store.redisSentinels and store.redisCluster exclude each other');
  const u = parseUrl(c.url);
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new Error('store.redisUrl: must be redis:// or rediss://');
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
      ...(tls ? { dnsLookup: (address: string, cb: (err: Error | null, address: string) => void) => cb(null, address) } : {}),
    };
    return new Cluster(
      c.cluster.map((n) => parseHostPort(n, 6379)),
      options,
    );
  }
  const retryStrategy = (times: number) => Math.min(times * 100, RETRY_CAP_MS);
  if (c.sentinels?.length) {
    return reconnectWhenEnded(new Redis({
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
    }));
  }
  return new Redis({
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

/** `{`, `}` and `%` escaped, so the id is one whole hash tag and no two ids collide. */
function tag(id: string): string {
  return id.replace(/%/g, '%25').replace(/\{/g, '%7B').replace(/\}/g, '%7D');
}

function fields(r: SessionRecord): string[] {
  const f = [
    'key',
    r.key,
    'protocolVersion',
    r.protocolVersion,
    'initializeResult',
    JSON.stringify(r.initializeResult),
    'createdAt',
    String(r.createdAt),
    'lastUsedAt',
    String(r.lastUsedAt),
    'generation',
    String(r.generation),
  ];
  if (r.sessionId !== undefined) f.push('sessionId', r.sessionId);
  if (r.target !== undefined) f.push('target', r.target);
  return f;
}

function pairs(flat: readonly string[]): Record<string, string> {
  const o: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) o[flat[i]!] = flat[i + 1]!;
  return o;
}

function parse(key: string, h: Record<string, string>, score: number | undefined): SessionRecord | undefined {
  if (h.generation === undefined) return undefined;
  const lastUsedAt = Number(h.lastUsedAt ?? 0);
  return {
    key: h.key ?? key,
    sessionId: h.sessionId,
    target: h.target,
    protocolVersion: h.protocolVersion ?? '',
    initializeResult: JSON.parse(h.initializeResult ?? '{}') as JsonObject,
    createdAt: Number(h.createdAt ?? 0),
    lastUsedAt: score !== undefined && score > lastUsedAt ? score : lastUsedAt,
    generation: Number(h.generation),
  };
}

export class RedisSessionStore implements SessionStore {
  readonly kind = 'redis';
  private readonly scripts: Scripts;
  private readonly idleKey: string;
  private state: 'connecting' | 'up' | 'down' = 'connecting';
  private warnedConnecting = false;
  private closing = false;
  private readonly reconnectListeners: Array<() => void> = [];

  constructor(
    readonly client: RedisClient,
    private readonly opts: RedisStoreOptions,
    private readonly log: Logger,
    where = 'redis',
  ) {
    if (/[{}]/.test(opts.keyPrefix)) {
      client.disconnect();
      throw new Error('store.keyPrefix: must not contain { or }');
    }
    this.idleKey = `${opts.keyPrefix}idle`;
    for (const [name, lua] of Object.entries(SCRIPTS)) {
      client.defineCommand(name, { numberOfKeys: 1, lua });
    }
    this.scripts = client as unknown as Scripts;
    // Connection trouble is logged once per outage; each failed command reaches the pool as a rejection.
    let connectedBefore = false;
    client.on('ready', () => {
      this.log.info({ redis: where }, connectedBefore ? 'redis reachable again' : 'redis connected');
      this.state = 'up';
      // A Redis that restarted (or failed over) may have lost records: the pool republishes its own.
      if (connectedBefore) for (const l of this.reconnectListeners) l();
      connectedBefore = true;
    });
    const lost = (err?: Error) => {
      if (this.closing) return;
      if (this.state === 'up') {
        this.state = 'down';
        this.log.warn({ redis: where, err: err?.message }, 'redis unreachable; new sessions stay replica-local until it returns');
      } else if (this.state === 'connecting' && !this.warnedConnecting) {
        this.warnedConnecting = true;
        this.log.warn({ redis: where, err: err?.message }, 'redis not reachable yet; sessions stay replica-local until it is');
      } else if (err) {
        this.log.debug({ redis: where, err: err.message }, 'redis error');
      }
    };
    client.on('error', (err: Error) => lost(err));
    client.on('close', () => lost());
  }

  /** `listener` runs each time the connection comes back after being lost. */
  onReconnect(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  /** Resolves true once connected, false if not within `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean> {
    if (this.client.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.client.on('ready', onReady);
    });
  }

  recordKey(id: string): string {
    return `${this.opts.keyPrefix}session:{${tag(id)}}`;
  }

  lockKey(id: string): string {
    return `${this.opts.keyPrefix}lock:{${tag(id)}}`;
  }

  get indexKey(): string {
    return this.idleKey;
  }

  async get(key: string): Promise<SessionRecord | undefined> {
    const [h, score] = await Promise.all([this.client.hgetall(this.recordKey(key)), this.client.zscore(this.idleKey, key)]);
    return parse(key, h, score === null ? undefined : Number(score));
  }

  async insert(record: SessionRecord): Promise<SessionRecord> {
    const existing = await this.scripts.cwInsert(this.recordKey(record.key), this.opts.recordTtlMs, ...fields(record));
    if (existing.length > 0) return parse(record.key, pairs(existing), undefined)!;
    await this.client.zadd(this.idleKey, record.lastUsedAt, record.key);
    return record;
  }

  async replace(expected: number, record: SessionRecord): Promise<SessionRecord> {
    const existing = await this.scripts.cwReplace(this.recordKey(record.key), expected, this.opts.recordTtlMs, ...fields(record));
    if (existing.length > 0) return parse(record.key, pairs(existing), undefined)!;
    await this.client.zadd(this.idleKey, record.lastUsedAt, record.key);
    return record;
  }

  async remove(key: string, generation: number): Promise<boolean> {
    const removed = (await this.scripts.cwRemove(this.recordKey(key), generation)) === 1;
    if (removed) await this.client.zrem(this.idleKey, key);
    return removed;
  }

  /**
   * One pipelined batch: a ZADD XX GT moving every entry's last use forward (never adding a
   * member for a record already removed), and a PEXPIRE per record to refresh its TTL.
   */
  async touch(entries: ReadonlyArray<{ key: string; lastUsedAt: number }>): Promise<void> {
    if (entries.length === 0) return;
    const scores: Array<string | number> = [];
    for (const e of entries) scores.push(e.lastUsedAt, e.key);
    if (this.client instanceof Cluster) {
      // A Cluster pipeline must stay on one node; these commands are written back to back anyway.
      await Promise.all([
        this.client.zadd(this.idleKey, 'XX', 'GT', ...scores),
        ...entries.map((e) => this.client.pexpire(this.recordKey(e.key), this.opts.recordTtlMs)),
      ]);
      return;
    }
    const p = this.client.pipeline();
    p.zadd(this.idleKey, 'XX', 'GT', ...scores);
    for (const e of entries) p.pexpire(this.recordKey(e.key), this.opts.recordTtlMs);
    const results = await p.exec();
    for (const [err] of results ?? []) if (err) throw err;
  }

  async lock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.scripts.cwLock(this.lockKey(key), owner, Math.max(1, Math.round(ttlMs)))) === 1;
  }

  async unlock(key: string, owner: string): Promise<void> {
    await this.scripts.cwUnlock(this.lockKey(key), owner);
  }

  /** Takes one token of `key`'s bucket: 0 when taken, else the ms until one is due (one round trip). */
  async take(key: string, ratePerSecond: number, burst: number): Promise<number> {
    return this.scripts.cwTake(`${this.opts.keyPrefix}rate:{${tag(key)}}`, ratePerSecond, burst);
  }

  async getGrant(key: string): Promise<string | undefined> {
    return (await this.client.get(this.grantKey(key))) ?? undefined;
  }

  async putGrant(key: string, sealed: string, ttlMs: number): Promise<void> {
    await this.client.set(this.grantKey(key), sealed, 'PX', Math.max(1, Math.round(ttlMs)));
  }

  async dropGrant(key: string): Promise<void> {
    await this.client.del(this.grantKey(key));
  }

  private grantKey(key: string): string {
    return `${this.opts.keyPrefix}grant:{${tag(key)}}`;
  }

  async idle(before: number, limit: number): Promise<SessionRecord[]> {
    if (limit <= 0) return [];
    const flat = await this.client.zrangebyscore(this.idleKey, '-inf', `(${before}`, 'WITHSCORES', 'LIMIT', 0, limit);
    const members: Array<{ id: string; score: number }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) members.push({ id: flat[i]!, score: Number(flat[i + 1]) });
    const hashes = await Promise.all(members.map((m) => this.client.hgetall(this.recordKey(m.id))));
    const out: SessionRecord[] = [];
    const gone: string[] = [];
    members.forEach((m, i) => {
      const r = parse(m.id, hashes[i]!, m.score);
      if (r) out.push(r);
      else gone.push(m.id);
    });
    // Index members whose record expired or was removed in a race.
    if (gone.length > 0) await this.client.zrem(this.idleKey, ...gone);
    return out;
  }

  async count(): Promise<number> {
    return this.client.zcard(this.idleKey);
  }

  async close(): Promise<void> {
    this.closing = true;
    const quit = this.client.status === 'ready' ? this.client.quit().catch(() => undefined) : undefined;
    await Promise.race([quit, new Promise((r) => setTimeout(r, 1000).unref())]);
    this.client.disconnect();
  }
}
