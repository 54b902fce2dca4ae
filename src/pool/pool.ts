// The session pool: acquire(key) gives an upstream session for (upstream, principal,
// capabilities), opening one with initialize only when no replica has. Creation and
// replacement are single-flight, locally by promise and across replicas by the store's lock
// and compare-and-set. A warm session is served from this replica's memory with no store call;
// its last use reaches the store in batches, every touchIntervalMs. A key this replica has no
// session for takes the cold path (opening.ts).
//
// When the store fails (Redis down or too slow; store-health.ts tells), the pool keeps serving:
// a session it cannot load or share is opened replica-local (`localOnly`). When the store answers
// again (or its connection comes back) reconcile.ts publishes what it opened meanwhile. Touch
// batches and the idle sweep are housekeeping.ts's.

import { causewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { JsonObject } from '../jsonrpc.js';
import { SessionExpiredError, TargetUnreachableError, type SessionRef } from '../upstream/index.js';
import { principalOf, SCOUT_PRINCIPAL, upstreamOf, type SessionKey } from './session-key.js';
import { Housekeeping } from './housekeeping.js';
import { SessionOpener, type OpenEvents, type OpenReason, type PoolUpstream } from './opening.js';
import type { PooledSession } from './session-facts.js';
import { republish } from './reconcile.js';
import { sameRecord, type SessionRecord, type SessionStore } from './store/index.js';
import { StoreHealth, StoreUnavailable } from './store-health.js';
import { inStepSpan } from '../tracing/index.js';

export interface PoolOptions {
  clientInfo: JsonObject;
  idleTtlMs: number;
  maxSessions: number;
  /** How long a creation lock is held before another replica may take over. */
  lockTtlMs: number;
  touchIntervalMs: number;
  /** After a store failure, new sessions skip the store this long before trying it again. Default 1000. */
  storeRetryMs?: number;
  /** A session superseded when replicas converge after an outage is ended upstream this much later. Default 30000. */
  retireGraceMs?: number;
  /**
   * The shared store’s count for maxSessions is read by the idle sweep, never
   * by a request; 0: by every new session too (tests of the bound).
   */
  countEveryMs?: 0;
}

export interface PoolEvents extends OpenEvents {
  onHit?(upstream: string): void;
  onMiss?(upstream: string): void;
  /**
   * A store command failed (op: claim, get, lock, unlock, insert, replace, remove, touch, idle, count, probe); e.g. a
   * Redis error.
   */
  onStoreError?(op: string): void;
  /** A session is new to this replica (opened or adopted); the request that brought it waits for this. */
  onAdopted?(session: PooledSession): Promise<void>;
  /** A session is being replaced (its upstream forgot it, or its URL went): what was learned on it is stale. */
  onReplaced?(key: SessionKey): void;
}

/** How the upstream client addresses a pooled session. */
export function sessionRef(s: PooledSession): SessionRef {
  return {
    sessionId: s.record.sessionId,
    protocolVersion: s.record.protocolVersion,
    target: s.record.target,
    principal: s.key.principalHash,
  };
}

export class SessionPool {
  private readonly local = new Map<string, PooledSession>();
  private readonly pending = new Map<string, Promise<PooledSession>>();
  private readonly housekeeping: Housekeeping;
  private readonly opener: SessionOpener;
  /** A replica-local session opened to replace a dead one: the record it replaces, for the CAS when it is published. */
  private readonly replacing = new WeakMap<PooledSession, SessionRecord>();
  /** Lost sessions already logged: one line per session, however many tries its replacement takes. */
  private readonly lossLogged = new WeakSet<PooledSession>();
  /** Sessions onAdopted was told of. */
  private readonly announced = new WeakSet<PooledSession>();
  /** Superseded sessions waiting for their DELETE. */
  private readonly retiring = new Map<NodeJS.Timeout, SessionRecord>();
  /** Shared by replicas (Redis): local eviction only forgets, and shutdown leaves sessions alive. */
  private readonly shared: boolean;
  private closed = false;
  private readonly health: StoreHealth;
  private republishing: Promise<void> | undefined;

  constructor(
    private readonly store: SessionStore,
    private readonly upstreams: Map<string, PoolUpstream>,
    private readonly opts: PoolOptions,
    private readonly log: Logger,
    private readonly events: PoolEvents = {},
  ) {
    this.shared = store.kind !== 'memory';
    this.health = new StoreHealth(
      store,
      {
        retryMs: opts.storeRetryMs ?? 1000,
        onError: (op) => events.onStoreError?.(op),
        onBack: () => this.startRepublish(),
      },
      log,
    );
    this.housekeeping = new Housekeeping(
      {
        local: this.local,
        store,
        health: this.health,
        log,
        terminate: (r) => this.terminate(r),
        end: (r) => this.end(r),
      },
      { idleTtlMs: opts.idleTtlMs, touchIntervalMs: opts.touchIntervalMs },
    );
    this.opener = new SessionOpener(
      {
        local: this.local,
        store,
        health: this.health,
        upstreams,
        events,
        log,
        makeRoom: () => this.makeRoom(),
        terminate: (r) => this.terminate(r),
      },
      { clientInfo: opts.clientInfo, lockTtlMs: opts.lockTtlMs },
    );
    store.onReconnect?.(() => {
      if (!this.closed) this.health.reconnected();
    });
  }

  /** Whether the shared store answers (store-health.ts). */
  get storeUp(): boolean {
    return this.health.isUp;
  }

  get size(): number {
    return this.local.size;
  }

  /** Sessions in this replica's pool per upstream (read at scrape time). */
  sizeByUpstream(): Map<string, number> {
    const counts = new Map<string, number>();
    // An upstream's scout session is Causeway's own, not a client's (session-key.ts): the standing streams count it.
    for (const s of this.local.values())
      if (s.key.principalHash !== SCOUT_PRINCIPAL) counts.set(s.key.upstream, (counts.get(s.key.upstream) ?? 0) + 1);
    return counts;
  }

  /** Every session this replica holds: no store call, no use recorded. */
  pooled(): IterableIterator<PooledSession> {
    return this.local.values();
  }

  /** The session this replica holds for a key id, if any: no store call, no use recorded. */
  peek(keyId: string): PooledSession | undefined {
    return this.local.get(keyId);
  }

  /**
   * Runs `use` on the key's session; if the upstream forgot that session, or its URL could not be
   * reached (so nothing was sent), replaces it once and runs `use` again.
   */
  async withSession<T>(key: SessionKey, use: (s: PooledSession) => Promise<T>): Promise<T> {
    const session = await this.acquire(key);
    try {
      return await use(session);
    } catch (err) {
      if (!(err instanceof SessionExpiredError)) throw err;
      try {
        return await use(await this.replaceLost(session, err));
      } catch (again) {
        if (again instanceof SessionExpiredError)
          throw causewayError('upstream_unavailable', 'The upstream lost the session again', undefined, again);
        throw again;
      }
    }
  }

  /**
   * The session for `key` when this replica holds it open on an admitted URL (acquire's warm case, with no await); else
   * undefined.
   */
  warm(key: SessionKey): PooledSession | undefined {
    const warm = this.local.get(key.id);
    return warm === undefined || !this.opener.admits(warm.record) ? undefined : warm;
  }

  /** A session warm() gave is used: as acquire() counts a warm one. */
  touch(session: PooledSession): void {
    this.markUsed(session);
    this.events.onHit?.(session.key.upstream);
  }

  /** The upstream forgot `session` (404), or its URL could not be reached: its replacement, made once. */
  replaceLost(session: PooledSession, err: SessionExpiredError): Promise<PooledSession> {
    return this.replace(session, err instanceof TargetUnreachableError ? 'unreachable' : 'expired');
  }

  async acquire(key: SessionKey): Promise<PooledSession> {
    const warm = this.local.get(key.id);
    if (warm) {
      if (!this.opener.admits(warm.record)) return this.replace(warm, 'ejected');
      this.touch(warm);
      return warm;
    }
    this.events.onMiss?.(key.upstream);
    return inStepSpan('causeway.pool.acquire', 'internal', { 'causeway.upstream': key.upstream }, () =>
      this.singleFlight(key.id, () => this.opener.load(key)),
    );
  }

  /**
   * The session is gone (404, unreachable) or its URL ejected: adopt a replacement another replica
   * made, or make it, once. A session moved off its URL is ended there later, should the URL live.
   */
  replace(stale: PooledSession, reason: Exclude<OpenReason, 'new'> = 'expired'): Promise<PooledSession> {
    this.events.onReplaced?.(stale.key);
    const replaced = this.replaceOnce(stale, reason);
    if (reason !== 'expired') {
      replaced.then(
        (fresh) => {
          const retired = [...this.retiring.values()].some((r) => sameRecord(r, stale.record));
          if (!retired && !sameRecord(fresh.record, stale.record)) this.retire(stale.record);
        },
        () => undefined,
      );
    }
    return replaced;
  }

  private replaceOnce(stale: PooledSession, reason: Exclude<OpenReason, 'new'>): Promise<PooledSession> {
    return this.singleFlight(stale.key.id, async () => {
      const current = this.local.get(stale.key.id);
      if (
        current &&
        current !== stale &&
        !sameRecord(current.record, stale.record) &&
        this.opener.admits(current.record)
      )
        return current;
      // Once per lost session: the calls that found it lost with this one wait on this flight, and
      // later tries (the upstream still down) log nothing more.
      if (reason !== 'ejected' && !this.lossLogged.has(stale)) {
        this.lossLogged.add(stale);
        this.log.info({ upstream: stale.key.upstream, reason }, 'upstream session lost; replacing it');
      }
      // Records known dead: the stale one, and the one a replica-local stale session itself replaced.
      const replaced = this.replacing.get(stale);
      const dead = (r: SessionRecord) =>
        sameRecord(r, stale.record) || (replaced !== undefined && sameRecord(r, replaced));
      const local = async () => {
        const s = await this.opener.openLocal(stale.key, reason, stale.record.generation + 1);
        if (!stale.localOnly) this.replacing.set(s, stale.record);
        else if (replaced) this.replacing.set(s, replaced);
        return s;
      };
      if (!this.health.usable()) return local();
      try {
        return await this.opener.openShared(stale.key, reason, stale.record, dead);
      } catch (err) {
        if (!(err instanceof StoreUnavailable)) throw err;
        return local();
      }
    });
  }

  /** Forget a session everywhere and end it upstream (it is not coming back). */
  async drop(session: PooledSession): Promise<void> {
    if (this.local.get(session.key.id) === session) this.local.delete(session.key.id);
    if (session.localOnly || (await this.store.remove(session.key.id, session.record.generation))) {
      await this.terminate(session.record);
    }
  }

  /**
   * A reload added, replaced or removed an upstream: its new sessions are opened with `next`. This
   * replica's sessions of the one replaced are forgotten here and in the store at once; the
   * function returned ends them upstream, once the calls running on them are done.
   */
  swapUpstream(name: string, next: PoolUpstream | undefined): () => Promise<void> {
    const before = this.upstreams.get(name);
    const gone = [...this.local.values()].filter((s) => s.key.upstream === name);
    for (const s of gone) this.local.delete(s.key.id);
    if (next) this.upstreams.set(name, next);
    else this.upstreams.delete(name);
    const forgotten = Promise.allSettled(
      gone.map((s) =>
        s.localOnly ? true : this.health.run('remove', () => this.store.remove(s.key.id, s.record.generation)),
      ),
    );
    return async () => {
      await forgotten;
      await Promise.allSettled(
        gone.map((s) =>
          before?.client
            .terminate(sessionRef(s))
            .catch((err: unknown) => this.log.debug({ err }, 'ending an upstream session failed')),
        ),
      );
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.housekeeping.stop();
    await this.republishing;
    const ending: Array<Promise<unknown>> = [];
    for (const [timer, record] of this.retiring) {
      clearTimeout(timer);
      ending.push(this.terminate(record));
    }
    this.retiring.clear();
    for (const s of this.local.values()) {
      // A memory store dies with this process, so its sessions are ended; shared ones stay for the
      // other replicas, except those this replica alone knows, and those that die with it (a
      // child process here): their records go, so no replica sends to a replica that is gone.
      if (!this.shared || this.endsHere(s.record)) ending.push(this.drop(s));
      else if (s.localOnly) ending.push(this.terminate(s.record));
    }
    await Promise.allSettled(ending);
    this.local.clear();
  }

  private singleFlight(id: string, make: () => Promise<PooledSession>): Promise<PooledSession> {
    const inFlight = this.pending.get(id);
    if (inFlight) return inFlight;
    const p = make()
      .then((s) => this.announce(s))
      .finally(() => this.pending.delete(id));
    this.pending.set(id, p);
    return p;
  }

  private async announce(s: PooledSession): Promise<PooledSession> {
    if (this.events.onAdopted === undefined || this.announced.has(s)) return s;
    this.announced.add(s);
    await this.events.onAdopted(s);
    return s;
  }

  /** This replica's sessions (no use recorded). */
  sessions(): IterableIterator<PooledSession> {
    return this.local.values();
  }

  private markUsed(s: PooledSession): void {
    const now = Date.now();
    s.lastUsedAt = now;
    this.housekeeping.used(s.key.id, now);
  }

  /**
   * The session this replica used least recently, found by a scan when a session is opened at
   * maxSessions. Kept in order instead (the Map's, by a delete and a set on every use), it cost
   * every warm call a new entry in the Map's table and, every few calls, the table rebuilt.
   */
  private leastRecentlyUsed(): PooledSession | undefined {
    let oldest: PooledSession | undefined;
    for (const s of this.local.values()) if (oldest === undefined || s.lastUsedAt < oldest.lastUsedAt) oldest = s;
    return oldest;
  }

  /**
   * Keeps this replica under maxSessions (memory store: ending the least recently used; shared
   * store: only forgetting it, since other replicas may use it) and, for a shared store, keeps the
   * store under maxSessions by ending its least recently used sessions.
   */
  private async makeRoom(): Promise<void> {
    while (this.local.size >= this.opts.maxSessions) {
      const oldest = this.leastRecentlyUsed();
      if (!oldest) break;
      this.local.delete(oldest.key.id);
      if (!this.shared || oldest.localOnly) {
        await this.drop(oldest).catch((err: unknown) => this.log.warn({ err }, 'evicting an upstream session failed'));
      }
    }
    if (this.shared && this.health.isUp)
      await this.housekeeping.boundStore(this.opts.maxSessions, this.opts.countEveryMs === 0);
  }

  /** Removes a stored record (compare-and-set) and, if this call removed it, ends it upstream. */
  private async end(record: SessionRecord): Promise<void> {
    if (!(await this.health.run('remove', () => this.store.remove(record.key, record.generation)))) return;
    const s = this.local.get(record.key);
    if (s && sameRecord(s.record, record)) this.local.delete(record.key);
    await this.terminate(record);
  }

  private terminate(record: SessionRecord): Promise<void> {
    const upstream = this.upstreams.get(upstreamOf(record.key));
    if (!upstream) return Promise.resolve();
    return upstream.client
      .terminate({
        sessionId: record.sessionId,
        protocolVersion: record.protocolVersion,
        target: record.target,
        principal: principalOf(record.key),
      })
      .catch((err: unknown) => this.log.debug({ err }, 'ending an upstream session failed'));
  }

  private endsHere(record: SessionRecord): boolean {
    return this.upstreams.get(upstreamOf(record.key))?.client.endsHere?.(record.target) === true;
  }

  /** Ends a superseded session later, so calls already running on it can finish. */
  private retire(record: SessionRecord): void {
    const timer = setTimeout(() => {
      this.retiring.delete(timer);
      void this.terminate(record);
    }, this.opts.retireGraceMs ?? 30_000);
    timer.unref();
    this.retiring.set(timer, record);
  }

  private startRepublish(): void {
    if (this.closed || this.republishing) return;
    this.republishing = republish({
      local: this.local,
      store: this.store,
      health: this.health,
      log: this.log,
      replacing: this.replacing,
      isClosed: () => this.closed,
      adopt: (key, record) => this.opener.adopt(key, record),
      retire: (record) => this.retire(record),
    }).finally(() => (this.republishing = undefined));
  }
}
