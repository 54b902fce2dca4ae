// Seen DPoP proof ids (key thumbprint + jti), each kept for the proof window. In memory for one
// replica; with the Redis store, the store's lock is the shared record: one SET NX PX per
// DPoP request, so a proof used at one replica is refused at every other.

import { createHash, randomUUID } from 'node:crypto';
import type { SessionStore } from '../pool/index.js';

export interface ReplayCache {
  /** true the first time `id` is seen within `ttlMs`; rejects when the shared record is unreachable. */
  first(id: string, ttlMs: number): Promise<boolean>;
}

const MAX_LOCAL = 100_000;

export class MemoryReplayCache implements ReplayCache {
  private readonly seen = new Map<string, number>();

  async first(id: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const until = this.seen.get(id);
    if (until !== undefined && until > now) return false;
    if (this.seen.size >= MAX_LOCAL) this.sweep(now);
    this.seen.set(id, now + ttlMs);
    return true;
  }

  private sweep(now: number): void {
    for (const [id, until] of this.seen) if (until <= now) this.seen.delete(id);
    // Still full of live ids: the oldest go, and a replay of one of them within its window passes.
    for (const id of this.seen.keys()) {
      if (this.seen.size < MAX_LOCAL) break;
      this.seen.delete(id);
    }
  }
}

export class StoreReplayCache implements ReplayCache {
  constructor(private readonly store: Pick<SessionStore, 'lock'>) {}

  first(id: string, ttlMs: number): Promise<boolean> {
    // Hashed: the key names neither the jti nor the key, and has a bounded length.
    const key = `dpop:${createHash('sha256').update(id).digest('base64url')}`;
    return this.store.lock(key, randomUUID(), ttlMs);
  }
}

export function replayCacheFor(store: SessionStore): ReplayCache {
  return store.kind === 'redis' ? new StoreReplayCache(store) : new MemoryReplayCache();
}
