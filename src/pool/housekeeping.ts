// The pool's background work on one replica: the last uses of shared sessions reach the store
// in one touch per touchIntervalMs (kept for later while the store is down), the store's health
// is probed on the same tick, and sessions idle past idleTtlMs are let go here and ended in the
// store (the oldest 100 per sweep). The sweep also reads the shared store's count, which bounds
// it to maxSessions before each new session without a read of its own (boundStore).
import type { Logger } from '../log.js';
import type { PooledSession } from './session-facts.js';
import type { SessionRecord, SessionStore } from './store/index.js';
import { StoreUnavailable, type StoreHealth } from './store-health.js';

/** What housekeeping needs of its pool. */
export interface HousekeepingHost {
  readonly local: Map<string, PooledSession>;
  readonly store: SessionStore;
  readonly health: StoreHealth;
  readonly log: Logger;
  /** Ends a session upstream. */
  terminate(record: SessionRecord): Promise<void>;
  /** Removes a stored record (compare-and-set) and, if that removed it, ends it upstream. */
  end(record: SessionRecord): Promise<void>;
}

export class Housekeeping {
  /** Key id -> last use, since the last touch. */
  private readonly dirty = new Map<string, number>();
  private readonly timers: NodeJS.Timeout[];
  private stopped = false;
  /** The shared store's session count as the sweep last read it, plus this replica's new sessions since. */
  private storeCount: number | undefined;

  constructor(
    private readonly host: HousekeepingHost,
    private readonly opts: { idleTtlMs: number; touchIntervalMs: number },
  ) {
    const sweep = setInterval(() => void this.sweep(), Math.max(1000, Math.min(opts.idleTtlMs / 4, 30_000)));
    const tick = setInterval(() => void this.tick(), opts.touchIntervalMs);
    sweep.unref();
    tick.unref();
    this.timers = [sweep, tick];
  }

  used(keyId: string, at: number): void {
    this.dirty.set(keyId, at);
  }

  /** Stops the timers; what is left to touch is flushed once. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    await this.flushTouches();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    await this.host.health.probe();
    await this.flushTouches();
  }

  /** One store.touch for every shared session used since the last flush. Kept while the store is down. */
  private async flushTouches(): Promise<void> {
    const { health, store, local } = this.host;
    if (this.dirty.size === 0 || !health.isUp) return;
    const entries: Array<{ key: string; lastUsedAt: number }> = [];
    for (const [key, lastUsedAt] of this.dirty) {
      if (local.get(key)?.localOnly === false) entries.push({ key, lastUsedAt });
    }
    this.dirty.clear();
    if (entries.length === 0) return;
    await health
      .run('touch', () => store.touch(entries))
      .catch(() => {
        for (const e of entries) if (!this.dirty.has(e.key)) this.dirty.set(e.key, e.lastUsedAt);
      });
  }

  /** Reads the shared store's count for the pool's maxSessions; once per sweep, never per request. */
  private async count(): Promise<void> {
    const { health, store } = this.host;
    const n = await health.run('count', () => store.count()).catch(() => undefined);
    if (n !== undefined) this.storeCount = n;
  }

  /**
   * Before a new session: keeps the shared store under `max` by ending its least recently used
   * sessions. The count is the sweep's plus this replica's own new sessions since, so a cold
   * session reads no idle shard (other replicas' new ones are seen at the next sweep); `readNow`
   * reads it first (tests of the bound).
   */
  async boundStore(max: number, readNow: boolean): Promise<void> {
    const { health, store } = this.host;
    if (readNow) this.storeCount = await health.run('count', () => store.count());
    if (this.storeCount === undefined) return;
    const count = this.storeCount;
    this.storeCount += 1;
    if (count < max) return;
    const oldest = await health.run('idle', () => store.idle(Date.now() + 1, count - max + 1));
    for (const record of oldest) await this.host.end(record);
    this.storeCount -= oldest.length;
  }

  private async sweep(): Promise<void> {
    if (this.stopped) return;
    const { health, store, local } = this.host;
    const before = Date.now() - this.opts.idleTtlMs;
    for (const s of [...local.values()]) {
      if (s.lastUsedAt < before) {
        local.delete(s.key.id);
        // Nobody else knows a replica-local session.
        if (s.localOnly) void this.host.terminate(s.record);
      }
    }
    if (!health.isUp) return;
    try {
      await this.flushTouches();
      for (const record of await health.run('idle', () => store.idle(before, 100))) await this.host.end(record);
      await this.count();
    } catch (err) {
      if (!(err instanceof StoreUnavailable)) this.host.log.warn({ err }, 'idle session sweep failed');
    }
  }
}
