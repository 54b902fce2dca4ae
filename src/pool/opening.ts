// The pool's cold path: a key this replica has no session for. One `claim` reads the store's
// record and, when there is none to use, takes the key's creation lock; with it the session is
// opened (initialize) and stored, which releases the lock; without it another replica is opening
// it and its record is awaited. A store that fails costs no request: the session is opened
// replica-local instead. Either way the session is adopted into this replica's pool (`local`).

import { SessionFacts, type PooledSession } from './session-facts.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log.js';
import type { JsonObject } from '../jsonrpc.js';
import type { UpstreamSessionClient } from '../upstream/index.js';
import { SCOUT_PRINCIPAL, scoutKey, upstreamOf, type SessionKey } from './session-key.js';
import { sameRecord, SharedResults, type SessionRecord, type SessionStore } from './store/index.js';
import { StoreUnavailable, type StoreHealth } from './store-health.js';
import { inStepSpan } from '../tracing/index.js';
import { backingOff, CausewayError } from '../errors.js';
import { isConnectionDrop, neverDelivered } from '../upstream/index.js';

/** What the pool needs of each upstream it opens sessions on. */
export interface PoolUpstream {
  client: UpstreamSessionClient;
  /** Offered in initialize; the upstream may negotiate an older one. */
  protocolVersion: string;
}

/** Why a session was opened: none yet, the upstream forgot it (404), its URL was ejected, or unreachable. */
export type OpenReason = 'new' | 'expired' | 'ejected' | 'unreachable';

/** What an initialize is counted as: its reason, or `scout` for an upstream's scout session (session-key.ts). */
export type InitializeReason = OpenReason | 'scout';

/** What opening a session tells (PoolEvents has them). */
export interface OpenEvents {
  onInitialize?(upstream: string, durationMs: number, reason: InitializeReason): void;
  /** A session was opened replica-local because the store failed. */
  onLocalSession?(upstream: string): void;
}

/** What opening needs of its pool. */
export interface OpenerHost {
  readonly local: Map<string, PooledSession>;
  readonly store: SessionStore;
  readonly health: StoreHealth;
  readonly upstreams: ReadonlyMap<string, PoolUpstream>;
  readonly events: OpenEvents;
  readonly log: Logger;
  /** Before a new session: this replica, and a shared store, kept under maxSessions. */
  makeRoom(): Promise<void>;
  /** Ends a session upstream. */
  terminate(record: SessionRecord): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The wait between two attempts at an upstream that cannot be reached: doubled per failure, capped low. */
const DOWN_FIRST_MS = 100;
const DOWN_CAP_MS = 1_000;

/** An upstream the last open could not reach: its opens take turns, one attempt at a time (see gated). */
interface Down {
  failures: number;
  /** When the next attempt may start. */
  retryAt: number;
  /** What the last attempt failed with, in words. */
  why: string;
  error: unknown;
  /** The attempt in flight: when it started, and whether it reached the upstream. */
  attempt?: { startedAt: number; reached: Promise<boolean> };
}

/**
 * The upstream could not be reached: the connection was refused, dropped or not made in time. It
 * is down or restarting. An answer of any kind (a refusal, a JSON-RPC error) says it is up; a
 * server that takes a connection and then does not answer is left to each call's own timeout
 * (a shared attempt would make calls that came during one wait for the next as well).
 */
function unreachable(err: unknown): boolean {
  const cause = err instanceof CausewayError ? err.cause : err;
  return neverDelivered(err) || isConnectionDrop(cause);
}

export class SessionOpener {
  /** This pool's token on the creation locks it takes. */
  private readonly owner = randomUUID();
  /** One object for each distinct initialize result: an upstream answers every session alike. */
  private readonly results = new SharedResults();
  /** Upstreams the last open could not reach, by name. */
  private readonly down = new Map<string, Down>();
  /** Per upstream: its scout's facts on this replica, which a new session's facts fall back on. */
  private readonly scouts = new Map<string, () => SessionFacts | undefined>();

  constructor(
    private readonly host: OpenerHost,
    private readonly opts: { clientInfo: JsonObject; lockTtlMs: number },
  ) {}

  /** False when the session's URL is ejected (or no longer configured): the session is moved before use. */
  admits(record: SessionRecord): boolean {
    return this.host.upstreams.get(upstreamOf(record.key))?.client.admits(record.target) ?? false;
  }

  /** A key this replica has no session for: from the store, or opened. */
  async load(key: SessionKey): Promise<PooledSession> {
    if (!this.host.health.usable()) return this.openLocal(key, 'new', 1);
    try {
      return await this.openShared(key, 'new', undefined);
    } catch (err) {
      if (!(err instanceof StoreUnavailable)) throw err;
      return this.openLocal(key, 'new', 1);
    }
  }

  /**
   * The key's session from the store, or a new one opened under the store's lock: one `claim`
   * reads the record and, when there is none to use, takes the lock. A record on an ejected URL,
   * `stale` and any other record `dead` tells are replaced. Another replica holding the lock is
   * opening the same session: its record is awaited instead of initializing a second one.
   */
  async openShared(
    key: SessionKey,
    reason: OpenReason,
    stale: SessionRecord | undefined,
    dead: (r: SessionRecord) => boolean = (r) => stale !== undefined && sameRecord(r, stale),
  ): Promise<PooledSession> {
    const deadline = Date.now() + this.opts.lockTtlMs * 2;
    let replacing = stale;
    for (;;) {
      const c = await this.host.health.run('claim', () =>
        this.host.store.claim(key.id, this.owner, this.opts.lockTtlMs, replacing?.generation),
      );
      if (c.state === 'live') {
        if (!dead(c.record) && this.admits(c.record)) return this.adopt(key, c.record);
        if (reason === 'new') reason = 'ejected';
        replacing = c.record;
        continue;
      }
      if (c.state === 'claimed')
        return this.openClaimed(key, reason, c.record, (c.record ?? replacing)?.generation ?? 0);
      if (Date.now() > deadline) throw new Error('timed out waiting for another replica to open the upstream session');
      await sleep(20);
    }
  }

  /**
   * Under the creation lock: initialize, then store the record (insert, or compare-and-set over
   * `stored`), which releases the lock in the same step. A session opened here that the store then
   * fails to record is kept, replica-local.
   */
  private async openClaimed(
    key: SessionKey,
    reason: OpenReason,
    stored: SessionRecord | undefined,
    lastGeneration: number,
  ): Promise<PooledSession> {
    let opened: SessionRecord | undefined;
    let released = false;
    try {
      if (stored === undefined) await this.host.makeRoom();
      const record = (opened = await this.initialize(key, reason, lastGeneration + 1));
      const after = await this.host.health.run(stored ? 'replace' : 'insert', () =>
        stored
          ? this.host.store.replace(stored.generation, record, this.owner)
          : this.host.store.insert(record, this.owner),
      );
      released = true;
      // Our lock ran out mid-initialize and another replica's session was stored first: use that one.
      if (!sameRecord(after, record)) void this.host.terminate(record);
      return this.adopt(key, after, false, sameRecord(after, record));
    } catch (err) {
      if (opened && err instanceof StoreUnavailable) {
        this.host.events.onLocalSession?.(key.upstream);
        return this.adopt(key, opened, true, true);
      }
      throw err;
    } finally {
      if (!released)
        await this.host.health.run('unlock', () => this.host.store.unlock(key.id, this.owner)).catch(() => undefined);
    }
  }

  /** Opens a session without the store: it failed just now, or recently. */
  async openLocal(key: SessionKey, reason: OpenReason, generation: number): Promise<PooledSession> {
    await this.host.makeRoom().catch(() => undefined);
    const record = await this.initialize(key, reason, generation);
    this.host.events.onLocalSession?.(key.upstream);
    this.host.log.debug({ reason }, 'upstream session opened replica-local (session store unavailable)');
    return this.adopt(key, record, true, true);
  }

  private async initialize(key: SessionKey, opening: OpenReason, generation: number): Promise<SessionRecord> {
    const upstream = this.upstream(key.upstream);
    const scout = key.principalHash === SCOUT_PRINCIPAL;
    const reason: InitializeReason = scout ? 'scout' : opening;
    const started = performance.now();
    const { protocolVersion } = upstream;
    // A scout says so in its name: the server's logs tell Causeway's own session from its clients'.
    const clientInfo = scout
      ? { ...this.opts.clientInfo, name: `${String(this.opts.clientInfo.name)} scout` }
      : this.opts.clientInfo;
    const params = { protocolVersion, capabilities: key.legacyCapabilities, clientInfo };
    const span = { 'mcp.method.name': 'initialize', 'causeway.upstream': key.upstream, 'causeway.pool.reason': reason };
    const hs = await inStepSpan('initialize', 'client', span, () =>
      this.gated(key.upstream, () => upstream.client.initialize(params, undefined, key.principalHash)),
    );
    this.host.events.onInitialize?.(key.upstream, performance.now() - started, reason);
    this.host.log.info(
      {
        upstream: key.upstream,
        target: upstream.client.targetIndex(hs.target),
        negotiated: hs.protocolVersion,
        reason,
        sessionful: hs.sessionId !== undefined,
      },
      'upstream session opened',
    );
    const now = Date.now();
    return {
      key: key.id,
      sessionId: hs.sessionId,
      target: hs.target,
      protocolVersion: hs.protocolVersion,
      initializeResult: hs.initializeResult,
      createdAt: now,
      lastUsedAt: now,
      generation,
    };
  }

  /**
   * Opens of an upstream that is up run side by side. Once one could not reach it, they share one
   * attempt at a time, DOWN_FIRST_MS apart doubling to DOWN_CAP_MS: a restarting server sees a
   * handful of handshakes from this replica, not one per call. An open waits for the next attempt
   * (at most DOWN_CAP_MS away) and, when that fails, is refused with backingOff (503, Retry-After):
   * it never fails on an attempt older than itself, so the first call after the server is back
   * waits less than DOWN_CAP_MS and is served.
   */
  private async gated<T>(upstream: string, open: () => Promise<T>): Promise<T> {
    const arrived = Date.now();
    for (;;) {
      const down = this.down.get(upstream);
      if (down === undefined) return this.attempt(upstream, open);
      if (down.attempt !== undefined) {
        const { startedAt, reached } = down.attempt;
        if (!(await reached) && startedAt >= arrived) {
          const last = this.down.get(upstream) ?? down;
          throw backingOff(upstream, last.why, Math.max(0, last.retryAt - Date.now()), last.error);
        }
        continue;
      }
      const wait = down.retryAt - Date.now();
      if (wait > 0) await sleep(wait);
      else return this.attempt(upstream, open, down);
    }
  }

  /** One open, and what it tells of the upstream: reached (up again), or not (down, the next attempt later). */
  private async attempt<T>(upstream: string, open: () => Promise<T>, down?: Down): Promise<T> {
    let reached!: (yes: boolean) => void;
    if (down !== undefined) down.attempt = { startedAt: Date.now(), reached: new Promise((r) => (reached = r)) };
    try {
      const opened = await open();
      this.up(upstream);
      return opened;
    } catch (err) {
      if (!unreachable(err)) this.up(upstream);
      else this.failed(upstream, err, down);
      throw err;
    } finally {
      if (down !== undefined) {
        down.attempt = undefined;
        reached(!this.down.has(upstream));
      }
    }
  }

  private up(upstream: string): void {
    if (this.down.delete(upstream)) this.host.log.info({ upstream }, 'upstream reachable again');
  }

  private failed(upstream: string, err: unknown, attempt: Down | undefined): void {
    const known = this.down.get(upstream);
    // Opens that ran side by side when it went down count once.
    if (known !== undefined && attempt === undefined) return;
    const failures = (known?.failures ?? 0) + 1;
    const cause: unknown = err instanceof CausewayError ? err.cause : err;
    const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
    const why = `${(err as Error).message}${typeof code === 'string' ? ` (${code})` : ''}`;
    const waitMs = Math.min(DOWN_FIRST_MS * 2 ** (failures - 1), DOWN_CAP_MS);
    this.down.set(upstream, { failures, retryAt: Date.now() + waitMs, why, error: err });
    if (failures === 1) this.host.log.warn({ upstream, err }, 'upstream unreachable: its opens take turns');
  }

  private scoutFacts(upstream: string): () => SessionFacts | undefined {
    let facts = this.scouts.get(upstream);
    if (facts === undefined) {
      const id = scoutKey(upstream).id;
      this.scouts.set(upstream, (facts = () => this.host.local.get(id)?.facts));
    }
    return facts;
  }

  /** Into this replica's pool: the session it has for this record already, or a new one. */
  adopt(key: SessionKey, record: SessionRecord, localOnly = false, openedHere = false): PooledSession {
    const existing = this.host.local.get(key.id);
    if (existing && sameRecord(existing.record, record)) {
      if (!localOnly) existing.localOnly = false;
      return existing;
    }
    record.initializeResult = this.results.share(record.initializeResult);
    const session: PooledSession = {
      key,
      record,
      facts:
        key.principalHash === SCOUT_PRINCIPAL
          ? SessionFacts.forScout()
          : new SessionFacts(this.scoutFacts(key.upstream)),
      lastUsedAt: Date.now(),
      localOnly,
      openedHere,
    };
    this.host.local.set(key.id, session);
    return session;
  }

  private upstream(name: string): PoolUpstream {
    const u = this.host.upstreams.get(name);
    if (!u) throw new Error(`no upstream named ${name}`);
    return u;
  }
}
