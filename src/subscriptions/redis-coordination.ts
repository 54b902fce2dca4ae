// ListenCoordinator on Redis: one GET-stream holder per session key across replicas, and
// resources/subscribe counts summed over every channel of the key that lives on a live replica
// (key layout in redis-keys.ts). Each channel has a token of its own, `<replica id>:<uuid>`, so
// a channel ending on a replica never drops what a newer channel of the same key there holds,
// and whatever a token holds is free once its replica has lapsed (bus/liveness.ts).
//
// Nothing here is renewed per session: liveness is the replica's, stated once per beat for all
// its sessions. So an idle session costs Redis nothing, and a listened one a script per attach,
// detach and take-over.
//
// - The lease is the holder's token, SET with a long TTL (LEASE_TTL_MS, only so that a key
//   nobody ends is collected; the holder restates it after half of that). It is taken from its
//   holder only when that holder's replica is among the lapsed the caller names, and given up by
//   compare-and-delete.
// - The cursor is the last GET-stream event id the holder handed on, with a mark of the upstream
//   session it belongs to. Only the lease holder's writes land (compare in the script), one in
//   flight per channel, newer ones coalesced; it lives as long as the lease.
// - Counts are stated, not incremented: a channel writes its whole count map in one script,
//   which also drops the counts of lapsed replicas' channels and reports the URIs whose total
//   went from 0 or to 0. A listening channel is also listed in the key's channel set, so that a
//   channel taking the lease knows whether others listened meanwhile.
//
// Redis failures never reach the channel: the lease is 'unknown', there is no cursor (the
// successor over-notifies), and the counts fall back to the channel's own (subscribe what it
// newly holds; unsubscribe nothing, since another replica may hold it). All scripts touch keys
// of one hash tag, so they run on Redis Cluster too.

import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { COMPARE_AND_DELETE, type LivenessListener, type ReplicaLiveness } from '../bus/index.js';
import type { Logger } from '../log.js';
import {
  LEASE_TTL_MS,
  positive,
  transitions,
  type ChannelCoordination,
  type HoldResult,
  type ListenCoordinator,
  type Transitions,
} from './coordination.js';
import { listenKeys, type ListenKeys } from './redis-keys.js';

/** Lua: the set of lapsed replicas from ARGV[from .. from + n - 1], and a token's replica. */
const LAPSED = `
local function lapsedFrom(from, n)
  local gone = {}
  for i = from, from + n - 1 do gone[ARGV[i]] = true end
  return gone
end
local function replicaOf(token) return string.match(token, '^[^:]*') end`;

/** Lua sources, exported for tests. */
export const LISTEN_SCRIPTS = {
  // KEYS holder, channels, cursor; ARGV token, ttl, fresh (1: forget the cursor when taken with
  // nobody else listening), n lapsed, lapsed... Returns 1 acquired, 2 renewed (the cursor too),
  // 3 acquired while another live channel listens, or the token of the live holder (taken).
  cwListenHold: {
    keys: 3,
    lua: `${LAPSED}
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return 2
end
local gone = lapsedFrom(5, tonumber(ARGV[4]))
if cur and not gone[replicaOf(cur)] then return cur end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
for _, c in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if c ~= ARGV[1] and not gone[replicaOf(c)] then return 3 end
end
if ARGV[3] == '1' then redis.call('DEL', KEYS[3]) end
return 1`,
  },
  // KEYS holder, cursor; ARGV token, cursor ('' forgets it), ttl. Only the holder writes.
  cwListenMark: {
    keys: 2,
    lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
return 1`,
  },
  // KEYS holder; ARGV token. Compare-and-delete.
  cwListenRelease: COMPARE_AND_DELETE,
  // KEYS uris, channels; ARGV token, listening (1: listed in the channel set, 0: not), ttl, n
  // lapsed, lapsed..., then uri, count pairs. Drops the fields and set members of lapsed
  // replicas' channels and the caller's own fields, writes the caller's, and returns {URIs whose
  // total went from 0, URIs whose total went to 0}.
  cwListenSync: {
    keys: 2,
    lua: `${LAPSED}
local me, n = ARGV[1], tonumber(ARGV[4])
local gone = lapsedFrom(5, n)
for _, c in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if gone[replicaOf(c)] then redis.call('SREM', KEYS[2], c) end
end
local before, after = {}, {}
local flat = redis.call('HGETALL', KEYS[1])
for i = 1, #flat, 2 do
  local f, c = flat[i], tonumber(flat[i + 1]) or 0
  local sp = string.find(f, ' ', 1, true)
  if not sp then
    redis.call('HDEL', KEYS[1], f)
  else
    local owner, uri = string.sub(f, 1, sp - 1), string.sub(f, sp + 1)
    if c > 0 then before[uri] = (before[uri] or 0) + c end
    if owner == me or gone[replicaOf(owner)] then
      redis.call('HDEL', KEYS[1], f)
    elseif c > 0 then
      after[uri] = (after[uri] or 0) + c
    end
  end
end
for i = 5 + n, #ARGV, 2 do
  local c = tonumber(ARGV[i + 1])
  if c and c > 0 then
    redis.call('HSET', KEYS[1], me .. ' ' .. ARGV[i], c)
    after[ARGV[i]] = (after[ARGV[i]] or 0) + c
  end
end
if ARGV[2] == '1' then redis.call('SADD', KEYS[2], me) else redis.call('SREM', KEYS[2], me) end
for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ARGV[3]) end
local sub, unsub = {}, {}
for uri in pairs(after) do if not before[uri] then sub[#sub + 1] = uri end end
for uri in pairs(before) do if not after[uri] then unsub[#unsub + 1] = uri end end
return {sub, unsub}`,
  },
  // KEYS uris; ARGV n lapsed, lapsed... The URIs with a positive count among live replicas' channels.
  cwListenUris: {
    keys: 1,
    lua: `${LAPSED}
local gone = lapsedFrom(2, tonumber(ARGV[1]))
local seen, out = {}, {}
local flat = redis.call('HGETALL', KEYS[1])
for i = 1, #flat, 2 do
  local f, c = flat[i], tonumber(flat[i + 1]) or 0
  local sp = string.find(f, ' ', 1, true)
  if sp and c > 0 and not gone[replicaOf(string.sub(f, 1, sp - 1))] then
    local uri = string.sub(f, sp + 1)
    if not seen[uri] then seen[uri] = true out[#out + 1] = uri end
  end
end
return out`,
  },
} as const;

type Lapsed = [number, ...string[]];

interface ListenScripts {
  cwListenHold(
    holder: string,
    channels: string,
    cursor: string,
    token: string,
    ttlMs: number,
    fresh: number,
    ...lapsed: Lapsed
  ): Promise<number | string>;
  cwListenMark(holder: string, cursor: string, token: string, value: string, ttlMs: number): Promise<number>;
  cwListenRelease(holder: string, token: string): Promise<number>;
  /** rest: ttl, n lapsed, lapsed..., then uri, count pairs. */
  cwListenSync(
    uris: string,
    channels: string,
    token: string,
    listening: number,
    ...rest: Array<string | number>
  ): Promise<[string[], string[]]>;
  cwListenUris(uris: string, ...lapsed: Lapsed): Promise<string[]>;
}

export interface RedisListenOptions {
  keyPrefix: string;
}

const HOLD: Readonly<Record<number, HoldResult>> = { 1: 'acquired', 2: 'renewed', 3: 'acquired-others' };

export class RedisListenCoordinator implements ListenCoordinator {
  readonly scripts: ListenScripts;
  private failing = false;

  constructor(
    readonly client: Redis | Cluster,
    readonly liveness: ReplicaLiveness,
    readonly opts: RedisListenOptions,
    private readonly log: Logger,
  ) {
    for (const [name, s] of Object.entries(LISTEN_SCRIPTS))
      client.defineCommand(name, { numberOfKeys: s.keys, lua: s.lua });
    this.scripts = client as unknown as ListenScripts;
  }

  join(keyId: string): ChannelCoordination {
    return new RedisChannel(this, listenKeys(this.opts.keyPrefix, keyId), `${this.liveness.replicaId}:${randomUUID()}`);
  }

  watch(listener: LivenessListener): () => void {
    return this.liveness.on(listener);
  }

  /** The lapsed replicas as script arguments: their number, then each. */
  lapsedArgs(): Lapsed {
    const lapsed = this.liveness.lapsed();
    return [lapsed.length, ...lapsed];
  }

  /** Logged once per outage; the channel carries on with its own view. */
  failed(op: string, err: unknown): void {
    if (this.failing) return this.log.debug({ op, err }, 'listen coordination still failing');
    this.failing = true;
    this.log.warn(
      { op, err },
      'listen coordination in Redis failed; listen channels act on their own view until it answers',
    );
  }

  answered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log.info('listen coordination in Redis answers again');
  }
}

function replicaOf(token: string): string {
  const colon = token.indexOf(':');
  return colon < 0 ? token : token.slice(0, colon);
}

class RedisChannel implements ChannelCoordination {
  /** The counts last stated. */
  private mine = new Map<string, number>();
  /**
   * Whether this channel is in the key's Redis state at all (counts or channel set): leave() then has something to
   * undo.
   */
  private stated = false;
  /** The replica of the lease holder this channel last saw, when another held it. */
  private holder: string | undefined;
  /** The cursor waiting to be written ('' forgets it); undefined: nothing to write. */
  private pending: string | undefined;
  private writing = false;
  behind = false;

  constructor(
    private readonly parent: RedisListenCoordinator,
    private readonly keys: ListenKeys,
    private readonly token: string,
  ) {}

  private get scripts(): ListenScripts {
    return this.parent.scripts;
  }

  get settling(): boolean {
    return this.parent.liveness.settling;
  }

  async hold(fresh = false): Promise<HoldResult> {
    try {
      const r = await this.scripts.cwListenHold(
        this.keys.holder,
        this.keys.channels,
        this.keys.cursor,
        this.token,
        LEASE_TTL_MS,
        fresh ? 1 : 0,
        ...this.parent.lapsedArgs(),
      );
      this.parent.answered();
      if (typeof r === 'string') {
        this.holder = replicaOf(r);
        return 'taken';
      }
      this.holder = undefined;
      return HOLD[r] ?? 'unknown';
    } catch (err) {
      this.parent.failed('hold', err);
      return 'unknown';
    }
  }

  heldByOneOf(replicas: readonly string[]): boolean {
    return this.holder !== undefined && replicas.includes(this.holder);
  }

  async release(): Promise<void> {
    try {
      await this.scripts.cwListenRelease(this.keys.holder, this.token);
    } catch (err) {
      this.parent.failed('release', err);
    }
  }

  sync(counts: ReadonlyMap<string, number>, listening: boolean): Promise<Transitions> {
    return this.state(positive(counts), listening);
  }

  leave(): Promise<Transitions> {
    if (!this.stated) return Promise.resolve({ subscribe: [], unsubscribe: [] });
    return this.state(new Map(), false);
  }

  private async state(counts: Map<string, number>, listening: boolean): Promise<Transitions> {
    const before = this.mine;
    this.mine = counts;
    const rest: Array<string | number> = [LEASE_TTL_MS, ...this.parent.lapsedArgs()];
    for (const [uri, n] of counts) rest.push(uri, n);
    try {
      const [subscribe, unsubscribe] = await this.scripts.cwListenSync(
        this.keys.uris,
        this.keys.channels,
        this.token,
        listening ? 1 : 0,
        ...rest,
      );
      this.stated = listening || counts.size > 0;
      this.behind = false;
      this.parent.answered();
      return { subscribe, unsubscribe };
    } catch (err) {
      this.parent.failed('sync', err);
      this.stated = true;
      this.behind = true;
      return { subscribe: transitions(before, counts).subscribe, unsubscribe: [] };
    }
  }

  async held(uris: readonly string[]): Promise<string[]> {
    const all = new Set(await this.uris());
    return uris.filter((u) => all.has(u));
  }

  async uris(): Promise<string[]> {
    try {
      const out = await this.scripts.cwListenUris(this.keys.uris, ...this.parent.lapsedArgs());
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
          await this.scripts.cwListenMark(this.keys.holder, this.keys.cursor, this.token, value, LEASE_TTL_MS);
          this.parent.answered();
        } catch (err) {
          this.parent.failed('mark', err);
        }
      }
      this.writing = false;
    })();
  }
}
