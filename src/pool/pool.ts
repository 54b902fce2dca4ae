// The session pool: acquire(key) gives an upstream session for (upstream, principal,
// capabilities), opening one with initialize only when no replica has. Creation and
// replacement are single-flight, locally by promise and across replicas by the store's lock
// and compare-and-set. A warm session is served from this replica's memory with no store call.

import { randomUUID } from 'node:crypto';
import type { Logger } from '../log.js';
import type { JsonObject } from '../jsonrpc.js';
import type { UpstreamClient } from '../upstream/legacy-client.js';
import { SessionExpiredError } from '../upstream/errors.js';
import type { SessionKey } from './session-key.js';
import type { SessionRecord, SessionStore } from './session-store.js';

export interface PoolOptions {
  protocolVersion: string;
  clientInfo: JsonObject;
  idleTtlMs: number;
  maxSessions: number;
  /** How long a creation lock is held before another replica may take over. */
  lockTtlMs: number;
  touchIntervalMs: number;
}

/** A session as this replica knows it, with replica-local facts learned while using it. */
export interface PooledSession {
  readonly key: SessionKey;
  record: SessionRecord;
  /** Local memo slots for facts derived from this session (tool header annotations, log level set). */
  memo: Map<string, unknown>;
  lastUsedAt: number;
}

export interface PoolEvents {
  onInitialize?(durationMs: number, reason: 'new' | 'expired'): void;
  onHit?(): void;
  onMiss?(): void;
}

export class SessionPool {
  private readonly local = new Map<string, PooledSession>();
  private readonly pending = new Map<string, Promise<PooledSession>>();
  private readonly dirty = new Map<string, number>();
  private readonly owner = randomUUID();
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;

  constructor(
    private readonly store: SessionStore,
    private readonly client: UpstreamClient,
    private readonly opts: PoolOptions,
    private readonly log: Logger,
    private readonly events: PoolEvents = {},
  ) {
    const sweep = setInterval(() => void this.sweep(), Math.max(1000, Math.min(opts.idleTtlMs / 4, 30_000)));
    const flush = setInterval(() => void this.flushTouches(), opts.touchIntervalMs);
    sweep.unref();
    flush.unref();
    this.timers.push(sweep, flush);
  }

  get size(): number {
    return this.local.size;
  }

  /** Runs `use` on the key's session; if the upstream forgot that session, replaces it once and runs `use` again. */
  async withSession<T>(key: SessionKey, use: (s: PooledSession) => Promise<T>): Promise<T> {
    const session = await this.acquire(key);
    try {
      return await use(session);
    } catch (err) {
      if (!(err instanceof SessionExpiredError)) throw err;
      this.log.info({ key: key.upstream }, 'upstream session expired; replacing it');
      return use(await this.replace(session));
    }
  }

  async acquire(key: SessionKey): Promise<PooledSession> {
    const warm = this.local.get(key.id);
    if (warm) {
      this.markUsed(warm);
      this.events.onHit?.();
      return warm;
    }
    this.events.onMiss?.();
    return this.singleFlight(key.id, () => this.load(key));
  }

  /** The session gave 404: adopt a replacement another replica made, or make it, once. */
  replace(stale: PooledSession): Promise<PooledSession> {
    return this.singleFlight(stale.key.id, async () => {
      const current = this.local.get(stale.key.id);
      if (current && current.record.generation > stale.record.generation) return current;
      const stored = await this.store.get(stale.key.id);
      if (stored && stored.generation > stale.record.generation) return this.adopt(stale.key, stored);
      const record = await this.createLocked(stale.key, 'expired', stale.record.generation);
      return this.adopt(stale.key, record);
    });
  }

  /** Forget a session everywhere and end it upstream (it is not coming back). */
  async drop(session: PooledSession): Promise<void> {
    this.local.delete(session.key.id);
    if (await this.store.remove(session.key.id, session.record.generation)) {
      await this.client.terminate({ sessionId: session.record.sessionId, protocolVersion: session.record.protocolVersion });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.flushTouches();
    // A memory store dies with this process, so its sessions are ended; shared ones stay for the other replicas.
    if (this.store.kind === 'memory') {
      await Promise.allSettled([...this.local.values()].map((s) => this.drop(s)));
    }
    this.local.clear();
  }

  private singleFlight(id: string, make: () => Promise<PooledSession>): Promise<PooledSession> {
    const inFlight = this.pending.get(id);
    if (inFlight) return inFlight;
    const p = make().finally(() => this.pending.delete(id));
    this.pending.set(id, p);
    return p;
  }

  private async load(key: SessionKey): Promise<PooledSession> {
    const stored = await this.store.get(key.id);
    if (stored) return this.adopt(key, stored);
    await this.makeRoom();
    return this.adopt(key, await this.createLocked(key, 'new', undefined));
  }

  /**
   * Opens a session under the store's lock. Another replica holding the lock is creating the
   * same session: wait for its record instead of initializing a second one.
   */
  private async createLocked(key: SessionKey, reason: 'new' | 'expired', staleGeneration: number | undefined): Promise<SessionRecord> {
    const deadline = Date.now() + this.opts.lockTtlMs * 2;
    for (;;) {
      if (await this.store.lock(key.id, this.owner, this.opts.lockTtlMs)) {
        try {
          const stored = await this.store.get(key.id);
          if (stored && (staleGeneration === undefined || stored.generation > staleGeneration)) return stored;
          const record = await this.initialize(key, reason, (stored?.generation ?? 0) + 1);
          return stored ? await this.store.replace(stored.generation, record) : await this.store.insert(record);
        } finally {
          await this.store.unlock(key.id, this.owner);
        }
      }
      await new Promise((r) => setTimeout(r, 20));
      const stored = await this.store.get(key.id);
      if (stored && (staleGeneration === undefined || stored.generation > staleGeneration)) return stored;
      if (Date.now() > deadline) throw new Error('timed out waiting for another replica to open the upstream session');
    }
  }

  private async initialize(key: SessionKey, reason: 'new' | 'expired', generation: number): Promise<SessionRecord> {
    const started = performance.now();
    const hs = await this.client.initialize({
      protocolVersion: this.opts.protocolVersion,
      capabilities: key.legacyCapabilities,
      clientInfo: this.opts.clientInfo,
    });
    this.events.onInitialize?.(performance.now() - started, reason);
    this.log.info({ negotiated: hs.protocolVersion, reason, sessionful: hs.sessionId !== undefined }, 'upstream session opened');
    const now = Date.now();
    return {
      key: key.id,
      sessionId: hs.sessionId,
      protocolVersion: hs.protocolVersion,
      initializeResult: hs.initializeResult,
      createdAt: now,
      lastUsedAt: now,
      generation,
    };
  }

  private adopt(key: SessionKey, record: SessionRecord): PooledSession {
    const existing = this.local.get(key.id);
    if (existing && existing.record.generation === record.generation) return existing;
    const session: PooledSession = { key, record, memo: new Map(), lastUsedAt: Date.now() };
    this.local.set(key.id, session);
    return session;
  }

  private markUsed(s: PooledSession): void {
    const now = Date.now();
    s.lastUsedAt = now;
    this.dirty.set(s.key.id, now);
    // Map order doubles as LRU order.
    this.local.delete(s.key.id);
    this.local.set(s.key.id, s);
  }

  private async makeRoom(): Promise<void> {
    while (this.local.size >= this.opts.maxSessions) {
      const oldest = this.local.values().next().value as PooledSession | undefined;
      if (!oldest) return;
      await this.drop(oldest).catch((err: unknown) => this.log.warn({ err }, 'evicting an upstream session failed'));
    }
  }

  private async flushTouches(): Promise<void> {
    if (this.dirty.size === 0) return;
    const entries = [...this.dirty].map(([key, lastUsedAt]) => ({ key, lastUsedAt }));
    this.dirty.clear();
    await this.store.touch(entries).catch((err: unknown) => this.log.warn({ err }, 'recording session use failed'));
  }

  private async sweep(): Promise<void> {
    if (this.closed) return;
    const before = Date.now() - this.opts.idleTtlMs;
    for (const s of [...this.local.values()]) {
      if (s.lastUsedAt < before) {
        this.local.delete(s.key.id);
      }
    }
    try {
      await this.flushTouches();
      for (const record of await this.store.idle(before, 100)) {
        if (await this.store.remove(record.key, record.generation)) {
          await this.client.terminate({ sessionId: record.sessionId, protocolVersion: record.protocolVersion });
        }
      }
    } catch (err) {
      this.log.warn({ err }, 'idle session sweep failed');
    }
  }
}
