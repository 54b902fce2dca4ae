// Which replicas are alive, kept per replica and never per session: each replica states itself
// in one sorted set every beatMs (member: its replica id; score: when its liveness lapses, on
// Redis's clock) and reads back which replicas have lapsed. Whatever a replica holds for a
// session (a GET-stream lease, resource subscription counts) names the replica, and is free for
// the others to take or drop once that replica is among the lapsed. So idle sessions cost Redis
// nothing: one script per replica per beat, whatever the number of sessions.
//
//   P replicas   zset   replica id -> when its liveness lapses (ms, Redis time); a replica that
//                       stops gracefully lapses at once. Lapsed members are forgotten FORGET_MS
//                       after they lapsed, well after any lease they named has expired.
//
// A replica whose own liveness lapsed (Redis was away, or the process stalled, for longer than
// ttlMs) or that Redis forgot (a restarted Redis) may have lost what it held to another: it is
// told (`resumed`) so it can claim again what is still its own. A Redis that does not answer
// changes nothing: the lapsed set stays as last read, and no replica is taken for dead.
//
// Settling: while Redis is away, and for ttlMs after it answers again or forgets this replica,
// what it holds may lack claims that their holders have not yet restated (a Redis restarted
// empty has no leases at all, though every replica still holds its streams). Holders restate at
// once (the connection's ready beats at once, and a forgotten replica is told `resumed`); the
// others leave what they find free alone until the window ends (`settled`), as they would a
// replica not heard of for ttlMs. One timer per replica, whatever the number of sessions.

import type { Logger } from '../log.js';
import type { Cluster, Redis } from 'ioredis';

/** A lapsed replica is forgotten this long after it lapsed: twice the longest a lease naming it lives. */
export const FORGET_MS = 48 * 3600_000;

// KEYS replicas; ARGV replica id, ttl (0: lapse now), forget. Returns {added (Redis had forgotten
// the caller), how many lapsed, lapsed ids..., live ids...}, the lapsed read before the caller's own
// renewal, the live after it (the caller among them unless it lapses now).
const BEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ms(x) return string.format('%.0f', x) end
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], ms(now - tonumber(ARGV[3])), '(' .. ms(now))
local ttl = tonumber(ARGV[2])
local added = redis.call('ZADD', KEYS[1], ttl > 0 and ms(now + ttl) or ms(now - 1), ARGV[1])
if added == 1 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ms(now - tonumber(ARGV[3]))) end
local live = redis.call('ZRANGEBYSCORE', KEYS[1], ms(now), '+inf')
local reply = {added, #lapsed}
for _, r in ipairs(lapsed) do table.insert(reply, r) end
for _, r in ipairs(live) do table.insert(reply, r) end
return reply`;

interface BeatScript {
  cwReplicaBeat(key: string, replica: string, ttl: number, forget: number): Promise<[number, number, ...string[]]>;
}

export interface LivenessListener {
  /** Replicas seen lapsed for the first time: what they held is free. */
  lapsed?(replicas: readonly string[]): void;
  /** This replica's own liveness lapsed, or Redis forgot it: others may have taken over what it held. */
  resumed?(): void;
  /** Each beat Redis answered: this replica is stated alive until ttlMs from now (the status page's part). */
  beat?(): void;
  /** A settling window ended (`settling`): whatever nobody claimed again by now is free to take. */
  settled?(): void;
}

export interface LivenessOptions {
  /** The sorted set (store.keyPrefix + "replicas"). */
  key: string;
  replicaId: string;
  /** A replica not heard of for this long has lapsed (subscriptions.takeoverMs). */
  ttlMs: number;
  /** How often each replica states itself: a third of ttlMs. */
  beatMs: number;
}

export class ReplicaLiveness {
  private readonly script: BeatScript;
  private readonly listeners = new Set<LivenessListener>();
  private lapsedNow = new Set<string>();
  private liveNow: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private beaten = false;
  private beating = false;
  private failing = false;
  /** The connection to Redis dropped after the first beat, and is not ready again yet. */
  private away = false;
  /** Until when (local clock) claims found missing may still be restated by their holders. */
  private settleUntil = 0;
  private settleTimer: NodeJS.Timeout | undefined;

  constructor(
    client: Redis | Cluster,
    private readonly opts: LivenessOptions,
    private readonly log: Logger,
  ) {
    client.defineCommand('cwReplicaBeat', { numberOfKeys: 1, lua: BEAT });
    this.script = client as unknown as BeatScript;
    client.on('close', () => {
      if (this.beaten && this.timer !== undefined) this.away = true;
    });
    // Back: beat at once, so that a Redis that forgot this replica hears its claims before the others take them.
    client.on('ready', () => {
      if (!this.away) return;
      this.away = false;
      this.settle();
      void this.beat();
    });
  }

  /**
   * Redis is away, or came back (or forgot this replica) less than ttlMs ago: a claim found
   * missing (a GET-stream lease) may be one its holder has not yet restated; leave it until `settled`.
   */
  get settling(): boolean {
    return this.away || Date.now() < this.settleUntil;
  }

  get replicaId(): string {
    return this.opts.replicaId;
  }

  /** Replicas lapsed as last read (never this one). */
  lapsed(): string[] {
    return [...this.lapsedNow];
  }

  /** Replicas live as last read, this one among them once it has beaten. */
  live(): string[] {
    return this.liveNow;
  }

  isLapsed(replica: string): boolean {
    return this.lapsedNow.has(replica);
  }

  on(listener: LivenessListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** States this replica alive now, then every beatMs. */
  async start(): Promise<void> {
    await this.beat();
    this.timer ??= setInterval(() => void this.beat(), this.opts.beatMs);
    this.timer.unref();
  }

  /** Stops beating and lapses at once, so the others take what is left over without waiting ttlMs. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    clearTimeout(this.settleTimer);
    await this.script.cwReplicaBeat(this.opts.key, this.opts.replicaId, 0, FORGET_MS).catch(() => undefined);
  }

  private async beat(): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    let reply: [number, number, ...string[]];
    try {
      reply = await this.script.cwReplicaBeat(this.opts.key, this.opts.replicaId, this.opts.ttlMs, FORGET_MS);
    } catch (err) {
      if (!this.failing)
        this.log.warn({ err }, 'cannot state this replica alive in Redis; nothing is taken over until it answers');
      this.failing = true;
      return;
    } finally {
      this.beating = false;
    }
    if (this.failing) this.log.info('replica liveness in Redis answers again');
    this.failing = false;
    const [added, count, ...ids] = reply;
    const lapsed = ids.slice(0, count);
    this.liveNow = ids.slice(count);
    const me = this.opts.replicaId;
    const selfLapsed = lapsed.includes(me) || (this.beaten && added === 1);
    const now = new Set(lapsed.filter((r) => r !== me));
    const fresh = [...now].filter((r) => !this.lapsedNow.has(r));
    this.lapsedNow = now;
    const first = !this.beaten;
    this.beaten = true;
    if (fresh.length > 0 && !first)
      this.log.info({ replicas: fresh.length }, 'replicas lapsed; taking over what they held');
    if (selfLapsed) this.settle();
    for (const l of this.listeners) {
      if (fresh.length > 0) l.lapsed?.(fresh);
      if (selfLapsed) l.resumed?.();
      l.beat?.();
    }
    if (selfLapsed) this.log.warn('this replica was taken for lapsed; claiming again what it held');
  }

  /** Opens (or extends) a settling window of ttlMs from now; its end is told once (`settled`). */
  private settle(): void {
    this.settleUntil = Date.now() + this.opts.ttlMs;
    clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(() => {
      this.settleTimer = undefined;
      if (this.away || this.timer === undefined) return;
      this.settleUntil = 0;
      for (const l of this.listeners) l.settled?.();
    }, this.opts.ttlMs);
    this.settleTimer.unref();
  }
}
