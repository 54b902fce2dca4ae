// SessionStore in this process's memory: the default without Redis, and the demo's store.
// One replica only; the locks exist so the pool runs the same code on every store.

import type { Claim, SessionRecord, SessionStore } from './session-store.js';

export class MemorySessionStore implements SessionStore {
  readonly kind = 'memory';
  private readonly records = new Map<string, SessionRecord>();
  private readonly locks = new Map<string, { owner: string; until: number }>();

  async get(key: string): Promise<SessionRecord | undefined> {
    return this.records.get(key);
  }

  async claim(key: string, owner: string, ttlMs: number, dead?: number): Promise<Claim> {
    const record = this.records.get(key);
    if (record && record.generation !== dead) return { state: 'live', record };
    return { state: (await this.lock(key, owner, ttlMs)) ? 'claimed' : 'locked', record };
  }

  async insert(record: SessionRecord, owner?: string): Promise<SessionRecord> {
    if (owner !== undefined) await this.unlock(record.key, owner);
    const existing = this.records.get(record.key);
    if (existing) return existing;
    this.records.set(record.key, record);
    return record;
  }

  async replace(expected: number, record: SessionRecord, owner?: string): Promise<SessionRecord> {
    if (owner !== undefined) await this.unlock(record.key, owner);
    const existing = this.records.get(record.key);
    if (existing && existing.generation !== expected) return existing;
    this.records.set(record.key, record);
    return record;
  }

  async remove(key: string, generation: number): Promise<boolean> {
    const existing = this.records.get(key);
    if (!existing || existing.generation !== generation) return false;
    this.records.delete(key);
    return true;
  }

  async touch(entries: ReadonlyArray<{ key: string; lastUsedAt: number }>): Promise<void> {
    for (const { key, lastUsedAt } of entries) {
      const r = this.records.get(key);
      if (r && r.lastUsedAt < lastUsedAt) this.records.set(key, { ...r, lastUsedAt });
    }
  }

  async lock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const held = this.locks.get(key);
    if (held && held.until > now && held.owner !== owner) return false;
    this.locks.set(key, { owner, until: now + ttlMs });
    return true;
  }

  async unlock(key: string, owner: string): Promise<void> {
    if (this.locks.get(key)?.owner === owner) this.locks.delete(key);
  }

  async idle(before: number, limit: number): Promise<SessionRecord[]> {
    return [...this.records.values()]
      .filter((r) => r.lastUsedAt < before)
      .sort((a, b) => a.lastUsedAt - b.lastUsedAt)
      .slice(0, limit);
  }

  async count(): Promise<number> {
    return this.records.size;
  }

  async close(): Promise<void> {
    this.records.clear();
    this.locks.clear();
  }
}
