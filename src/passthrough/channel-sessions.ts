// The legacy sessions a channel face opened, each its own upstream session (one child process or
// HTTP+SSE connection), never the pool's and never shared. The Mcp-Session-Id a client gets
// carries the whole SessionRef (session id, negotiated version, target), bound to the client's
// principal as the passthrough binds its ids (session-binding.ts), so any replica can serve it:
// a session another replica opened is reached through the client (replica-relay.ts). The
// upstream client ends a session's channel once idle for idleTtlMs, whichever replica used it
// last; the sessions kept here (for their GET streams and for close) are then forgotten.

import type { Logger } from '../log.js';
import type { SessionRef, UpstreamSessionClient } from '../upstream/index.js';
import type { SessionBinding } from './session-binding.js';

export interface LegacySession {
  readonly ref: SessionRef;
  lastUsedAt: number;
  /** Calls and streams in flight: a busy session is never swept. */
  busy: number;
  /** Ends the session's GET stream, when one is open. */
  endStream: (() => void) | undefined;
}

/** The longest time between two sweeps; a short idleTtlMs sweeps more often, but at most once a second. */
const MAX_SWEEP_MS = 30_000;

function encodeRef(ref: SessionRef): string {
  return Buffer.from(JSON.stringify([ref.sessionId, ref.protocolVersion, ref.target ?? null])).toString('base64url');
}

function decodeRef(id: string): SessionRef | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(id)) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(id, 'base64url').toString('utf8'));
    if (!Array.isArray(v) || v.length !== 3) return undefined;
    const [sessionId, protocolVersion, target] = v as unknown[];
    if (
      typeof sessionId !== 'string' ||
      typeof protocolVersion !== 'string' ||
      (target !== null && typeof target !== 'string')
    )
      return undefined;
    return { sessionId, protocolVersion, target: target ?? undefined };
  } catch {
    return undefined;
  }
}

export class LegacySessions {
  /** Upstream session id -> the session. */
  private readonly open = new Map<string, LegacySession>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly client: UpstreamSessionClient,
    private readonly binding: SessionBinding | undefined,
    private readonly idleTtlMs: number,
    private readonly log: Logger,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(1000, Math.min(idleTtlMs / 4, MAX_SWEEP_MS)));
    this.sweeper.unref();
  }

  get size(): number {
    return this.open.size;
  }

  /** Keeps a session the client just opened; returns the Mcp-Session-Id to hand it. */
  add(ref: SessionRef, principal: string): string {
    this.open.set(ref.sessionId!, { ref, lastUsedAt: Date.now(), busy: 0, endStream: undefined });
    const id = encodeRef(ref);
    return this.binding ? this.binding.bind(id, principal) : id;
  }

  /**
   * The session a client's Mcp-Session-Id names, if it was handed to this principal: one opened
   * here, or one another replica opened (kept here from now on too, for its GET stream).
   */
  find(clientId: string, principal: string): LegacySession | undefined {
    const id = this.binding ? this.binding.open(clientId, principal) : clientId;
    const ref = id === undefined ? undefined : decodeRef(id);
    if (ref?.sessionId === undefined) return undefined;
    const session = this.open.get(ref.sessionId);
    if (session === undefined) {
      const adopted: LegacySession = { ref, lastUsedAt: Date.now(), busy: 0, endStream: undefined };
      this.open.set(ref.sessionId, adopted);
      return adopted;
    }
    if (session.ref.protocolVersion !== ref.protocolVersion || session.ref.target !== ref.target) return undefined;
    session.lastUsedAt = Date.now();
    return session;
  }

  /** Runs `fn` with the session marked busy. */
  async use<T>(session: LegacySession, fn: () => Promise<T>): Promise<T> {
    session.busy += 1;
    try {
      return await fn();
    } finally {
      session.busy -= 1;
      session.lastUsedAt = Date.now();
    }
  }

  /** Forgets the session (its upstream said it is gone). */
  forget(session: LegacySession): void {
    if (this.open.get(session.ref.sessionId!) === session) this.open.delete(session.ref.sessionId!);
  }

  /** Ends the session upstream (its child process or connection) and forgets it. */
  async end(session: LegacySession): Promise<void> {
    this.forget(session);
    session.endStream?.();
    await this.client
      .terminate(session.ref)
      .catch((err: unknown) => this.log.debug({ err }, 'ending a legacy session failed'));
  }

  /** Ends every open GET stream; the sessions stay. */
  endStreams(): void {
    for (const s of this.open.values()) s.endStream?.();
  }

  /** Stops the sweep and ends every session that lives in this replica (the others' go on). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const here = [...this.open.values()].filter((s) => this.client.endsHere?.(s.ref.target) ?? true);
    await Promise.allSettled(here.map((s) => this.end(s)));
  }

  /** Forgets sessions idle here: their channels are ended by the client (it sees every replica's use). */
  private sweep(): void {
    const before = Date.now() - this.idleTtlMs;
    for (const s of [...this.open.values()]) {
      if (s.busy > 0 || s.endStream !== undefined || s.lastUsedAt >= before) continue;
      this.forget(s);
    }
  }
}
