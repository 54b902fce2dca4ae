// SessionStore on Redis (ioredis): what lets every replica use an upstream session any replica
// opened. Key layout, with P the key prefix (store.keyPrefix, default "causeway:") and ID the
// session key id (upstream|principal hash|capability fingerprint; never a raw principal):
//
//   P session:{ID}  hash    key, sessionId (absent for sessionless upstreams), target (upstream URL),
//                           protocolVersion, initializeResult (JSON), createdAt, lastUsedAt (as written), generation.
//                           PEXPIRE recordTtlMs (a bit above store.idleTtlMs), refreshed by touch.
//   P lock:{ID}     string  owner token of the replica opening or replacing the session; PX lockTtl.
//   P idle:{N}      zset    one of IDLE_SHARDS shards (N = 0..15, by a hash of ID): member ID, score last
//                           use (epoch ms). The authority on lastUsedAt: touch moves it forward
//                           (ZADD XX GT); idle() and count() read every shard.
//
// {ID} is the Cluster hash tag, so a record and its lock share a slot and every script touches one
// slot; the idle shards are hash-tagged apart, so a Cluster spreads the index over its nodes. The
// index is written beside the scripts (never inside them), so in a race it can briefly disagree
// with the records: idle() drops members whose record is gone, and a record missing from the
// index still dies by its TTL. A new session costs three commands (cwClaim, cwInsert, one ZADD),
// its first use on another replica one (cwClaim).
//
// On the same connection the store keeps what other stages share across replicas (`shared`,
// shared/): the users' grants and the rate-limit buckets, and the client for the tasks' records.
//
// Every command has a timeout and nothing is queued while Redis is away (enableOfflineQueue
// false): a failing command rejects at once and the pool carries on with replica-local sessions.

import type { JsonObject } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { COMPARE_AND_DELETE, ioredis, type RedisClient } from '../../bus/index.js';
import type { Claim, SessionRecord, SessionStore, SharedParts } from './session-store.js';
import { RedisBuckets, RedisGrants, tag } from './shared/index.js';

export interface RedisStoreOptions {
  keyPrefix: string;
  /** Redis TTL of a record, refreshed by touch. */
  recordTtlMs: number;
}

interface Scripts {
  cwClaim(record: string, lock: string, owner: string, ttl: number, dead: string): Promise<string[]>;
  cwInsert(record: string, lock: string, ttl: number, owner: string, ...fields: string[]): Promise<string[]>;
  cwReplace(
    record: string,
    lock: string,
    expected: number,
    ttl: number,
    owner: string,
    ...fields: string[]
  ): Promise<string[]>;
  cwRemove(key: string, generation: number): Promise<number>;
  cwLock(key: string, owner: string, ttl: number): Promise<number>;
  cwUnlock(key: string, owner: string): Promise<number>;
}

/** Releases the creation lock (KEYS[2]) when `owner` holds it. */
const RELEASE = (owner: string) => `
if ${owner} ~= '' and redis.call('GET', KEYS[2]) == ${owner} then redis.call('DEL', KEYS[2]) end`;

/** Lua sources and how many keys each takes, exported so tests can recognise them by SHA. Each touches one slot. */
export const SCRIPTS = {
  // KEYS record, lock; ARGV owner, ttl, dead generation ('' for none). Returns {'live', record...}
  // when a record other than the dead one is stored; otherwise takes (or renews) the lock for the
  // owner: {'claimed', record...} or {'locked', record...}, with whatever record there is.
  cwClaim: {
    keys: 2,
    lua: `
local rec = redis.call('HGETALL', KEYS[1])
if #rec > 0 then
  local g
  for i = 1, #rec, 2 do if rec[i] == 'generation' then g = tonumber(rec[i + 1]) end end
  if ARGV[3] == '' or g ~= tonumber(ARGV[3]) then table.insert(rec, 1, 'live') return rec end
end
local state = 'locked'
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  state = 'claimed'
elseif redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  state = 'claimed'
end
table.insert(rec, 1, state)
return rec`,
  },
  // KEYS record, lock; ARGV ttl, owner, fields. Stores the record unless one exists; returns the
  // existing one (HGETALL) or {} when stored. Releases the owner's lock either way.
  cwInsert: {
    keys: 2,
    lua: `${RELEASE('ARGV[2]')}
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HGETALL', KEYS[1]) end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {}`,
  },
  // KEYS record, lock; ARGV expected generation, ttl, owner, fields. Compare-and-set on
  // generation: replaces while the stored generation is the expected one (or none is stored).
  cwReplace: {
    keys: 2,
    lua: `${RELEASE('ARGV[3]')}
local g = redis.call('HGET', KEYS[1], 'generation')
if g and tonumber(g) ~= tonumber(ARGV[1]) then return redis.call('HGETALL', KEYS[1]) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {}`,
  },
  // Compare-and-delete on generation.
  cwRemove: {
    keys: 1,
    lua: `
local g = redis.call('HGET', KEYS[1], 'generation')
if g and tonumber(g) == tonumber(ARGV[1]) then redis.call('DEL', KEYS[1]) return 1 end
return 0`,
  },
  // SET NX PX with an owner token; the owner may renew its own lock.
  cwLock: {
    keys: 1,
    lua: `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
return 0`,
  },
  // Compare-and-delete on the owner token.
  cwUnlock: COMPARE_AND_DELETE,
} as const;

/** Shards of the idle index: enough for a Cluster to spread it, few enough for a sweep to read them all. */
export const IDLE_SHARDS = 16;

/** The idle shard of a key id (FNV-1a): stable across replicas and restarts. */
export function idleShard(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % IDLE_SHARDS;
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

/** Why a replica that never reached its Redis is not ready: the settings to check. */
const NOT_REACHED = 'session store not reached yet: check store.redisUrl (or store.redisSentinels, store.redisCluster)';

export class RedisSessionStore implements SessionStore {
  readonly kind = 'redis';
  readonly shared: SharedParts;
  private readonly scripts: Scripts;
  private readonly idleKeys: string[];
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
    this.idleKeys = Array.from({ length: IDLE_SHARDS }, (_, n) => `${opts.keyPrefix}idle:{${n}}`);
    for (const [name, { keys, lua }] of Object.entries(SCRIPTS))
      client.defineCommand(name, { numberOfKeys: keys, lua });
    this.scripts = client as unknown as Scripts;
    this.shared = {
      client,
      grants: new RedisGrants(client, opts.keyPrefix),
      buckets: new RedisBuckets(client, opts.keyPrefix),
    };
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
        this.log.warn(
          { redis: where, err: err?.message },
          'redis unreachable; new sessions stay replica-local until it returns',
        );
      } else if (this.state === 'connecting' && !this.warnedConnecting) {
        this.warnedConnecting = true;
        this.log.warn(
          { redis: where, err: err?.message },
          'redis not reachable yet; sessions stay replica-local until it is',
        );
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

  /**
   * Until Redis has been reached once (a typo in store.redisUrl never is), a replica shares
   * nothing: it must not report ready. Lost later, it is ready still: every replica would lose it
   * at once, and replica-local sessions serve better than none.
   */
  notReady(): string | undefined {
    // Not the address: /readyz answers on the data port too; the log names it.
    return this.state === 'connecting' ? NOT_REACHED : undefined;
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

  /** The idle shard a key id is indexed in. */
  indexKey(id: string): string {
    return this.idleKeys[idleShard(id)]!;
  }

  async get(key: string): Promise<SessionRecord | undefined> {
    const [h, score] = await Promise.all([
      this.client.hgetall(this.recordKey(key)),
      this.client.zscore(this.indexKey(key), key),
    ]);
    return parse(key, h, score === null ? undefined : Number(score));
  }

  async claim(key: string, owner: string, ttlMs: number, dead?: number): Promise<Claim> {
    const [state, ...flat] = await this.scripts.cwClaim(
      this.recordKey(key),
      this.lockKey(key),
      owner,
      Math.max(1, Math.round(ttlMs)),
      dead === undefined ? '' : String(dead),
    );
    const record = parse(key, pairs(flat), undefined);
    if (state === 'live' && record) return { state, record };
    return { state: state === 'claimed' ? 'claimed' : 'locked', record };
  }

  async insert(record: SessionRecord, owner = ''): Promise<SessionRecord> {
    const existing = await this.scripts.cwInsert(
      this.recordKey(record.key),
      this.lockKey(record.key),
      this.opts.recordTtlMs,
      owner,
      ...fields(record),
    );
    return this.written(record, existing);
  }

  async replace(expected: number, record: SessionRecord, owner = ''): Promise<SessionRecord> {
    const existing = await this.scripts.cwReplace(
      this.recordKey(record.key),
      this.lockKey(record.key),
      expected,
      this.opts.recordTtlMs,
      owner,
      ...fields(record),
    );
    return this.written(record, existing);
  }

  /** What a write script answered: the record already there (the write lost), or `record`, then indexed. */
  private async written(record: SessionRecord, existing: string[]): Promise<SessionRecord> {
    if (existing.length > 0) return parse(record.key, pairs(existing), undefined)!;
    await this.client.zadd(this.indexKey(record.key), record.lastUsedAt, record.key);
    return record;
  }

  async remove(key: string, generation: number): Promise<boolean> {
    const removed = (await this.scripts.cwRemove(this.recordKey(key), generation)) === 1;
    if (removed) await this.client.zrem(this.indexKey(key), key);
    return removed;
  }

  /**
   * One batch: per idle shard a ZADD XX GT moving its entries' last use forward (never adding a
   * member for a record already removed), and a PEXPIRE per record to refresh its TTL.
   */
  async touch(entries: ReadonlyArray<{ key: string; lastUsedAt: number }>): Promise<void> {
    if (entries.length === 0) return;
    const byShard = new Map<string, Array<string | number>>();
    for (const e of entries) {
      const k = this.indexKey(e.key);
      let scores = byShard.get(k);
      if (!scores) byShard.set(k, (scores = []));
      scores.push(e.lastUsedAt, e.key);
    }
    if (this.client instanceof ioredis().Cluster) {
      // A Cluster pipeline must stay on one node; these commands are written back to back anyway.
      await Promise.all([
        ...[...byShard].map(([k, scores]) => this.client.zadd(k, 'XX', 'GT', ...scores)),
        ...entries.map((e) => this.client.pexpire(this.recordKey(e.key), this.opts.recordTtlMs)),
      ]);
      return;
    }
    const p = this.client.pipeline();
    for (const [k, scores] of byShard) p.zadd(k, 'XX', 'GT', ...scores);
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

  /** The oldest records last used before `before`: up to `limit` from each shard, merged, the oldest `limit` kept. */
  async idle(before: number, limit: number): Promise<SessionRecord[]> {
    if (limit <= 0) return [];
    const shards = await Promise.all(
      this.idleKeys.map((k) => this.client.zrangebyscore(k, '-inf', `(${before}`, 'WITHSCORES', 'LIMIT', 0, limit)),
    );
    const members: Array<{ id: string; score: number }> = [];
    for (const flat of shards)
      for (let i = 0; i + 1 < flat.length; i += 2) members.push({ id: flat[i]!, score: Number(flat[i + 1]) });
    members.sort((a, b) => a.score - b.score);
    members.length = Math.min(members.length, limit);
    const hashes = await Promise.all(members.map((m) => this.client.hgetall(this.recordKey(m.id))));
    const out: SessionRecord[] = [];
    const gone: string[] = [];
    members.forEach((m, i) => {
      const r = parse(m.id, hashes[i]!, m.score);
      if (r) out.push(r);
      else gone.push(m.id);
    });
    // Index members whose record expired or was removed in a race.
    await Promise.all(gone.map((id) => this.client.zrem(this.indexKey(id), id)));
    return out;
  }

  async count(): Promise<number> {
    const counts = await Promise.all(this.idleKeys.map((k) => this.client.zcard(k)));
    return counts.reduce((a, b) => a + b, 0);
  }

  async close(): Promise<void> {
    this.closing = true;
    const quit = this.client.status === 'ready' ? this.client.quit().catch(() => undefined) : undefined;
    await Promise.race([quit, new Promise((r) => setTimeout(r, 1000).unref())]);
    this.client.disconnect();
  }
}
