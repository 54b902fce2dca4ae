// ListenCoordinator on Redis: one GET-stream holder per session key across replicas, and
// resources/subscribe counts summed over every live channel of the key (key layout in
// redis-keys.ts). Each channel has a token of its own (not the replica's id), so a channel ending
// on a replica never drops what a newer channel of the same key there holds.
//
// - The lease is SET NX PX with the token (TTL subscriptions.takeoverMs), renewed by its holder on
//   every heartbeat (heartbeatMs, a third of the TTL) and listen tick, and given up by
//   compare-and-delete. A holder that dies stops renewing; its lease expires and the next
//   heartbeat of another listening channel takes it.
// - The cursor is the last GET-stream event id the holder handed on, with a mark of the upstream
//   session it belongs to. Only the lease holder's writes land (compare in the script), one in
//   flight per channel, newer ones coalesced; it lives a liveness TTL past the lease, renewed
//   with it, so a successor finds it and resumes from it.
// - Counts are stated, not incremented: a channel writes its whole count map and its liveness
//   (a zset score, Redis time + TTL) in one script, which also drops the counts of channels whose
//   liveness expired (a dead replica's) and reports the URIs whose total went from 0 or to 0. So
//   a lost write is repaired by the next tick, and a dead replica's subscriptions are released
//   upstream by whichever replica next syncs.
//
// Redis failures never reach the channel: the lease is 'unknown', there is no cursor (the
// successor over-notifies), and the counts fall back to the
// channel's own (subscribe what it newly holds; unsubscribe nothing, since another replica may
// hold it). All scripts touch keys of one hash tag, so they run on Redis Cluster too.

import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { positive, transitions, type ChannelCoordination, type HoldResult, type ListenCoordinator, type Transitions } from './coordination.js';
import { listenKeys, type ListenKeys } from './redis-keys.js';

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ms(x) return string.format('%.0f', x) end`;

/** Lua sources, exported for tests. */
export const LISTEN_SCRIPTS = {
  // KEYS holder, channels, cursor; ARGV token, ttl, cursor ttl. 0 taken, 1 acquired, 2 renewed,
  // 3 acquired while other channels listen. A renewal keeps the holder's cursor too.
  cwListenHold: {
    keys: 3,
    lua: `${NOW}
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
  return 2
end
if cur then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
for _, c in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ms(now), '+inf')) do
  if c ~= ARGV[1] then return 3 end
end
return 1`,
  },
  // KEYS holder, cursor; ARGV token, cursor ('' forgets it), cursor ttl. Only the holder writes.
  cwListenMark: {
    keys: 2,
    lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
return 1`,
  },
  // KEYS holder; ARGV token. Compare-and-delete.
  cwListenRelease: {
    keys: 1,
    lua: `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
  },
  // KEYS uris, channels; ARGV token, ttl (0: the channel leaves), then uri, count pairs.
  // Drops the fields of channels no longer alive and the caller's own, writes the caller's, and
  // returns {URIs whose total went from 0, URIs whose total went to 0}.
  cwListenSync: {
    keys: 2,
    lua: `${NOW}
local me, ttl = ARGV[1], tonumber(ARGV[2])
local live = {}
for _, c in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ms(now), '+inf')) do live[c] = true end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ms(now))
local before, after = {}, {}
local flat = redis.call('HGETALL', KEYS[1])
for i = 1, #flat, 2 do
  local f, n = flat[i], tonumber(flat[i + 1]) or 0
  local sp = string.find(f, ' ', 1, true)
  if not sp then
    redis.call('HDEL', KEYS[1], f)
  else
    local owner, uri = string.sub(f, 1, sp - 1), string.sub(f, sp + 1)
    if n > 0 then before[uri] = (before[uri] or 0) + n end
    if owner == me or not live[owner] then
      redis.call('HDEL', KEYS[1], f)
    elseif n > 0 then
      after[uri] = (after[uri] or 0) + n
    end
  end
end
if ttl > 0 then
  for i = 3, #ARGV, 2 do
    local n = tonumber(ARGV[i + 1])
    if n and n > 0 then
      redis.call('HSET', KEYS[1], me .. ' ' .. ARGV[i], n)
      after[ARGV[i]] = (after[ARGV[i]] or 0) + n
    end
  end
  redis.call('ZADD', KEYS[2], ms(now + ttl), me)
  for _, k in ipairs(KEYS) do
    if redis.call('PTTL', k) ~= -2 and redis.call('PTTL', k) < ttl then redis.call('PEXPIRE', k, ttl) end
  end
else
  redis.call('ZREM', KEYS[2], me)
end
local sub, unsub = {}, {}
for uri in pairs(after) do if not before[uri] then sub[#sub + 1] = uri end end
for uri in pairs(before) do if not after[uri] then unsub[#unsub + 1] = uri end end
return {sub, unsub}`,
  },
  // KEYS uris, channels. The URIs with a positive count among live channels.
  cwListenUris: {
    keys: 2,
    lua: `${NOW}
local live = {}
for _, c in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ms(now), '+inf')) do live[c] = true end
local seen, out = {}, {}
local flat = redis.call('HGETALL', KEYS[1])
for i = 1, #flat, 2 do
  local f, n = flat[i], tonumber(flat[i + 1]) or 0
  local sp = string.find(f, ' ', 1, true)
  if sp and n > 0 and live[string.sub(f, 1, sp - 1)] then
    local uri = string.sub(f, sp + 1)
    if not seen[uri] then seen[uri] = true out[#out + 1] = uri end
  end
end
return out`,
  },
} as const;

interface ListenScripts {
  cwListenHold(holder: string, channels: string, cursor: string, token: string, ttlMs: number, cursorTtlMs: number): Promise<number>;
  cwListenMark(holder: string, cursor: string, token: string, value: string, ttlMs: number): Promise<number>;
  cwListenRelease(holder: string, token: string): Promise<number>;
  cwListenSync(uris: string, channels: string, token: string, ttlMs: number, ...pairs: Array<string | number>): Promise<[string[], string[]]>;
  cwListenUris(uris: string, channels: string): Promise<string[]>;
}

export interface RedisListenOptions {
  keyPrefix: string;
  /** GET-stream lease TTL (subscriptions.takeoverMs). */
  leaseTtlMs: number;
  /** Channel liveness TTL, renewed on the listen tick (see coordination.ts leaseTtlMs); default leaseTtlMs. */
  livenessTtlMs?: number;
  /** How often channels renew or check the lease (coordination.ts heartbeatMs); unset: only on the listen tick. */
  heartbeatMs?: number;
}

const HOLD: Readonly<Record<number, HoldResult>> = { 0: 'taken', 1: 'acquired', 2: 'renewed', 3: 'acquired-others' };

export class RedisListenCoordinator implements ListenCoordinator {
  readonly scripts: ListenScripts;
  readonly heartbeatMs: number | undefined;
  readonly livenessTtlMs: number;
  /** A shared cursor outlives the lease that guards it, so a channel taking the lease over still finds it. */
  readonly cursorTtlMs: number;
  private failing = false;

  constructor(
    readonly client: Redis | Cluster,
    readonly opts: RedisListenOptions,
    private readonly log: Logger,
  ) {
    for (const [name, s] of Object.entries(LISTEN_SCRIPTS)) client.defineCommand(name, { numberOfKeys: s.keys, lua: s.lua });
    this.scripts = client as unknown as ListenScripts;
    this.heartbeatMs = opts.heartbeatMs;
    this.livenessTtlMs = opts.livenessTtlMs ?? opts.leaseTtlMs;
    this.cursorTtlMs = opts.leaseTtlMs + this.livenessTtlMs;
  }

  join(keyId: string): ChannelCoordination {
    return new RedisChannel(this, listenKeys(this.opts.keyPrefix, keyId), randomUUID());
  }

  /** Logged once per outage; the channel carries on with its own view. */
  failed(op: string, err: unknown): void {
    if (this.failing) return this.log.debug({ op, err }, 'listen coordination still failing');
    this.failing = true;
    this.log.warn({ op, err }, 'listen coordination in Redis failed; listen channels act on their own view until it answers');
  }

  answered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log.info('listen coordination in Redis answers again');
  }
}

class RedisChannel implements ChannelCoordination {
  /** The counts last stated. */
  private mine = new Map<string, number>();
  /** The cursor waiting to be written ('' forgets it); undefined: nothing to write. */
  private pending: string | undefined;
  private writing = false;

  constructor(
    private readonly parent: RedisListenCoordinator,
    private readonly keys: ListenKeys,
    private readonly token: string,
  ) {}

  private get scripts(): ListenScripts {
    return this.parent.scripts;
  }

  async hold(): Promise<HoldResult> {
    try {
      const p = this.parent;
      const r = await this.scripts.cwListenHold(this.keys.holder, this.keys.channels, this.keys.cursor, this.token, p.opts.leaseTtlMs, p.cursorTtlMs);
      this.parent.answered();
      return HOLD[r] ?? 'unknown';
    } catch (err) {
      this.parent.failed('hold', err);
      return 'unknown';
    }
  }

  async release(): Promise<void> {
    try {
      await this.scripts.cwListenRelease(this.keys.holder, this.token);
    } catch (err) {
      this.parent.failed('release', err);
    }
  }

  sync(counts: ReadonlyMap<string, number>): Promise<Transitions> {
    return this.state(positive(counts), this.parent.livenessTtlMs);
  }

  leave(): Promise<Transitions> {
    return this.state(new Map(), 0);
  }

  private async state(counts: Map<string, number>, ttlMs: number): Promise<Transitions> {
    const before = this.mine;
    this.mine = counts;
    const pairs: Array<string | number> = [];
    for (const [uri, n] of counts) pairs.push(uri, n);
    try {
      const [subscribe, unsubscribe] = await this.scripts.cwListenSync(this.keys.uris, this.keys.channels, this.token, ttlMs, ...pairs);
      this.parent.answered();
      return { subscribe, unsubscribe };
    } catch (err) {
      this.parent.failed('sync', err);
      return { subscribe: transitions(before, counts).subscribe, unsubscribe: [] };
    }
  }

  async held(uris: readonly string[]): Promise<string[]> {
    const all = new Set(await this.uris());
    return uris.filter((u) => all.has(u));
  }

  async uris(): Promise<string[]> {
    try {
      const out = await this.scripts.cwListenUris(this.keys.uris, this.keys.channels);
      this.parent.answered();
      return out;
    } catch (err) {
      this.parent.failed('uris', err);
      return [...this.mine.keys()];
    }
  }

  async cursor(): Promise<string | undefined> {
    try {
      const v = await this.parent.client.get(this.keys.cursor);
      this.parent.answered();
      return v ?? undefined;
    } catch (err) {
      this.parent.failed('cursor', err);
      return undefined;
    }
  }

  /** One write in flight at a time; what arrives meanwhile collapses into the newest. */
  mark(cursor: string | undefined): void {
    this.pending = cursor ?? '';
    if (this.writing) return;
    this.writing = true;
    void (async () => {
      while (this.pending !== undefined) {
        const value = this.pending;
        this.pending = undefined;
        try {
          await this.scripts.cwListenMark(this.keys.holder, this.keys.cursor, this.token, value, this.parent.cursorTtlMs);
          this.parent.answered();
        } catch (err) {
          this.parent.failed('mark', err);
        }
      }
      this.writing = false;
    })();
  }
}
