// A legacy upstream whose every session is one MessageChannel (a stdio child process or a
// 2024-11-05 HTTP+SSE connection). The session id Causeway keeps is a local channel id, so such
// sessions live in this replica (replicas/replica-relay.ts reaches them from the others). Many
// requests are in flight on one channel at once; channel-session.ts matches answers to them by
// JSON-RPC id and routes what the server sends outside an answer.
// At most maxChannels channels are open; to open one more the least recently used idle one (no
// call in flight, no open stream) is closed, and with none idle the open is refused (overloaded).
// A channel idle for idleTtlMs is closed too: its last use is seen here whoever asked for it (a
// pooled session, a legacy client's, another replica's through the relay).
// A channel lost with calls in flight fails them (upstream_unavailable); the next request on its
// session gets SessionExpiredError, so the pool opens a new one, after a backoff when channels
// keep being lost. A channel that fails its handshake counts as lost too; until one succeeds, opens
// take turns and, within the backoff, are refused at once (initialize() says how).
// A call cannot be resumed: resumeCall is refused, and the bridge replays.

import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { backingOff, CausewayError, refusedInitialize } from '../../errors.js';
import { isObject, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { CallScope, ScopeSet, badResponse } from '../http/index.js';
import {
  type HandshakeResult,
  type InitializeParams,
  type StreamHandlers,
  ResumeRefusedError,
  SessionExpiredError,
  type SessionRef,
  type UpstreamSessionClient,
  timedRequest,
  Work,
} from '../core/index.js';
import { ChannelSession, idKey, type OpenStream, type Pending } from './channel-session.js';
import type { ChannelOpener, MessageChannel } from './message-channel.js';

export interface ChannelClientOptions {
  requestTimeoutMs: number;
  /** Most channels (processes) open at once. */
  maxChannels: number;
  /** Backoff before opening a channel after one was lost: first wait, doubled per loss, capped. */
  restartBackoffMs?: number;
  maxRestartBackoffMs?: number;
  /** A channel with no call in flight, no open stream and no use for this long is closed. */
  idleTtlMs?: number;
  /** Called once per request() with its outcome and duration, as UpstreamClient does. */
  onRequest?(method: string, result: 'ok' | 'error' | 'failed' | 'cancelled', seconds: number): void;
  /** Open channels, after each change. */
  onChannels?(open: number): void;
  /** A channel was opened after one was lost (a restart). */
  onRestart?(): void;
}

/** The HTTP status ResumeRefusedError carries when the transport has no resumable streams. */
const NO_RESUME_STATUS = 405;
/** A channel that lived this long before it was lost counts as the first loss again. */
const HEALTHY_LIFETIME_MS = 10_000;
const INITIALIZE_ID = 0;
/** The longest time between two idle sweeps; a short idleTtlMs sweeps more often, at most once a second. */
const MAX_SWEEP_MS = 30_000;

export class ChannelClient implements UpstreamSessionClient {
  private readonly sessions = new Map<string, ChannelSession>();
  private readonly lifetime = new ScopeSet();
  private readonly quiesce = new AbortController();
  private readonly work = new Work();
  private closing: Promise<void> | undefined;
  private opening = 0;
  private losses = 0;
  private lastLossAt = 0;
  private restartOwed = false;
  /** A child has answered its handshake since the last one failed: opens run side by side. */
  private proven = false;
  /** The open every other waits on while none is proven. */
  private trial: Promise<void> | undefined;
  /** The last failed start: opens until `until` are refused with it. */
  private failedStart: { why: string; error: unknown; until: number } | undefined;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly name: string,
    private readonly opener: ChannelOpener,
    private readonly log: Logger,
    private readonly opts: ChannelClientOptions,
  ) {
    setMaxListeners(0, this.quiesce.signal);
    const ttl = opts.idleTtlMs;
    if (ttl !== undefined) {
      this.sweeper = setInterval(() => this.sweep(ttl), Math.max(1000, Math.min(ttl / 4, MAX_SWEEP_MS)));
      this.sweeper.unref();
    }
  }

  private sweep(idleTtlMs: number): void {
    const before = Date.now() - idleTtlMs;
    for (const s of [...this.sessions.values()]) {
      if (!s.idle || s.lastUsedAt >= before) continue;
      this.log.debug('closing an upstream channel left idle');
      void this.end(s);
    }
  }

  /** Channels open now. */
  get size(): number {
    return this.sessions.size;
  }

  admits(): boolean {
    return true;
  }

  targetIndex(): number {
    return 0;
  }

  /**
   * Until a child has answered its handshake (at start, and after one failed) one open runs at a
   * time and the others wait for it: a server that refuses initialize starts one process, not one
   * per waiting request. After a failed handshake, opens within its backoff are refused at once
   * (backingOff, 503 with Retry-After, naming the refusal); the first one after it tries again.
   */
  initialize(params: InitializeParams, signal?: AbortSignal): Promise<HandshakeResult> {
    return this.work.track(true, async () => {
      for (;;) {
        if (this.proven) return this.open(params, signal);
        const failed = this.failedStart;
        if (failed !== undefined && Date.now() < failed.until) {
          throw backingOff(this.name, failed.why, failed.until - Date.now(), failed.error);
        }
        if (this.trial === undefined) {
          const trial = this.open(params, signal);
          this.trial = trial.then(
            () => undefined,
            () => undefined,
          );
          void this.trial.then(() => (this.trial = undefined));
          return trial;
        }
        await this.trial;
        if (signal?.aborted) throw signal.reason;
      }
    });
  }

  private async open(params: InitializeParams, signal: AbortSignal | undefined): Promise<HandshakeResult> {
    const scope = this.scope(signal, this.opts.requestTimeoutMs);
    let session: ChannelSession | undefined;
    this.opening += 1;
    try {
      await this.makeRoom();
      await this.backoff(scope);
      const channel = await this.opener.open(scope.signal);
      session = this.adopt(channel);
      this.opening -= 1;
      this.changed();
      if (this.restartOwed) {
        this.restartOwed = false;
        this.opts.onRestart?.();
      }
      const msg: JsonRpcRequest = { jsonrpc: '2.0', id: INITIALIZE_ID, method: 'initialize', params: { ...params } };
      const response = await this.exchange(session, msg, {}, scope);
      if ('error' in response) throw refusedInitialize(this.name, params.protocolVersion, response.error);
      const version = response.result.protocolVersion;
      if (typeof version !== 'string' || version === '') throw badResponse('initialize result has no protocolVersion');
      await session.channel.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      this.log.debug({ protocolVersion: version }, 'upstream channel initialized');
      this.proven = true;
      this.failedStart = undefined;
      return { sessionId: session.id, protocolVersion: version, target: undefined, initializeResult: response.result };
    } catch (err) {
      if (session === undefined) this.opening -= 1;
      const settled = scope.settle(err);
      // Room refused, or the caller gone: nothing is known of the server.
      const started = !(err instanceof CausewayError && err.reason === 'overloaded') && !signal?.aborted;
      if (started && this.work.state === 'open') this.startFailed(session, settled);
      if (session !== undefined) void this.end(session);
      throw settled;
    } finally {
      scope.dispose();
    }
  }

  /**
   * A child that could not be started or failed its handshake (refused initialize, exited, said
   * nothing in time) counts as a loss, as one that crashed: later opens back off, and until one
   * succeeds they are refused at once with why this one failed.
   */
  private startFailed(session: ChannelSession | undefined, err: unknown): void {
    // A child that exited during the handshake was counted by lose().
    if (session === undefined || !session.lost) {
      this.losses += 1;
      this.lastLossAt = Date.now();
      this.restartOwed = true;
    }
    this.proven = false;
    const why = err instanceof Error ? err.message : String(err);
    this.failedStart = { why, error: err, until: this.lastLossAt + this.backoffMs() };
    this.log.warn({ err, backoffMs: this.failedStart.until - Date.now() }, 'upstream process failed to start');
  }

  request(
    session: SessionRef,
    msg: JsonRpcRequest,
    handlers: StreamHandlers,
    signal?: AbortSignal,
    _extraHeaders?: Record<string, string>,
    timeoutMs?: number,
  ): Promise<JsonRpcResponse> {
    return this.work.track(true, async () => {
      const s = this.live(session);
      const scope = this.scope(signal, timeoutMs ?? this.opts.requestTimeoutMs);
      const asked = { value: false };
      return timedRequest(
        signal,
        scope,
        () => this.exchange(s, msg, handlers, scope, asked),
        (result, seconds) => {
          if (!asked.value) this.opts.onRequest?.(msg.method, result, seconds);
        },
      );
    });
  }

  /** A channel keeps no stream to take up again: the bridge replays the call instead. */
  resumeCall(): Promise<JsonRpcResponse> {
    return Promise.reject(new ResumeRefusedError(this.name, NO_RESUME_STATUS));
  }

  notify(session: SessionRef, n: JsonRpcNotification): Promise<void> {
    return this.oneWay(session, n);
  }

  respond(session: SessionRef, r: JsonRpcResponse): Promise<void> {
    const s = session.sessionId === undefined ? undefined : this.sessions.get(session.sessionId);
    if (s && r.id !== null && r.id !== undefined) {
      const key = idKey(r.id);
      s.asks.get(key)?.outstanding.delete(key);
      s.asks.delete(key);
    }
    return this.oneWay(session, r);
  }

  /**
   * Registers `handlers` for the session's messages that belong to no call; done rejects with SessionExpiredError when
   * the session is lost.
   */
  openStream(
    session: SessionRef,
    handlers: StreamHandlers,
    signal: AbortSignal,
  ): Promise<'unsupported' | { done: Promise<void> }> {
    return this.work.track(true, async () => {
      const s = this.live(session);
      let end!: (err?: unknown) => void;
      const done = new Promise<void>((resolve, reject) => {
        const stream: OpenStream = {
          handlers,
          end: (err) => {
            if (!s.streams.delete(stream)) return;
            signal.removeEventListener('abort', onAbort);
            this.quiesce.signal.removeEventListener('abort', onAbort);
            if (err === undefined) resolve();
            else reject(err);
          },
        };
        const onAbort = (): void => stream.end();
        end = stream.end;
        s.streams.add(stream);
        signal.addEventListener('abort', onAbort, { once: true });
        this.quiesce.signal.addEventListener('abort', onAbort, { once: true });
      });
      if (signal.aborted || this.quiesce.signal.aborted) end();
      s.lastUsedAt = Date.now();
      return { done: this.work.register(done) };
    });
  }

  async terminate(session: SessionRef): Promise<void> {
    const s = session.sessionId === undefined ? undefined : this.sessions.get(session.sessionId);
    if (s) await this.end(s);
  }

  /** Refuses new work, ends open streams, lets in-flight calls finish, then closes every channel. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.sweeper);
      this.work.refuseNew();
      this.quiesce.abort();
      await this.work.settle();
      this.work.state = 'closed';
      await Promise.allSettled([...this.sessions.values()].map((s) => this.end(s)));
      await this.opener.close?.();
    })();
    return this.closing;
  }

  /** Fails every call now and closes every channel. */
  async destroy(): Promise<void> {
    clearInterval(this.sweeper);
    this.work.state = 'closed';
    this.quiesce.abort();
    this.lifetime.end();
    await Promise.allSettled([...this.sessions.values()].map((s) => this.end(s)));
    await this.opener.close?.();
  }

  private adopt(channel: MessageChannel): ChannelSession {
    const s = new ChannelSession(randomUUID(), channel, this.log);
    this.sessions.set(s.id, s);
    channel.onMessage((m) => s.route(m));
    channel.onClose((reason) => this.lose(s, reason));
    if (channel.closed)
      this.lose(s, new CausewayError('upstream_unavailable', `Upstream ${this.name}: its channel closed`));
    return s;
  }

  /** The channel ended: by us (reason undefined) or on its own. Its calls fail, its streams end. */
  private lose(s: ChannelSession, reason: Error | undefined): void {
    if (s.lost) return;
    s.lost = true;
    if (this.sessions.get(s.id) === s) {
      this.sessions.delete(s.id);
      this.changed();
    }
    if (reason !== undefined && this.work.state === 'open') {
      const now = Date.now();
      this.losses = now - s.openedAt >= HEALTHY_LIFETIME_MS ? 1 : this.losses + 1;
      this.lastLossAt = now;
      this.restartOwed = true;
      this.log.warn({ err: reason, callsInFlight: s.pending.size }, 'upstream channel lost');
    }
    const error =
      reason ?? new CausewayError('upstream_unavailable', `Upstream ${this.name}: the session's channel was closed`);
    for (const p of s.pending.values()) p.settle({ error });
    for (const stream of [...s.streams]) stream.end(new SessionExpiredError(this.name, { cause: error }));
  }

  private async end(s: ChannelSession): Promise<void> {
    this.lose(s, undefined);
    await s.channel.close().catch((err: unknown) => this.log.debug({ err }, 'closing an upstream channel failed'));
  }

  /** Below maxChannels: close the least recently used idle channel, or refuse. */
  private async makeRoom(): Promise<void> {
    while (this.sessions.size + this.opening > this.opts.maxChannels) {
      let oldest: ChannelSession | undefined;
      for (const s of this.sessions.values())
        if (s.idle && (oldest === undefined || s.lastUsedAt < oldest.lastUsedAt)) oldest = s;
      if (oldest === undefined)
        throw new CausewayError(
          'overloaded',
          `Upstream ${this.name}: all ${this.opts.maxChannels} of its processes are busy`,
        );
      this.log.info('closing the least recently used idle upstream process to start another');
      await this.end(oldest);
    }
  }

  private async backoff(scope: CallScope): Promise<void> {
    if (this.losses === 0) return;
    const wait = this.backoffMs() - (Date.now() - this.lastLossAt);
    if (wait > 0) await scope.sleep(wait);
  }

  /** The wait after the last loss: restartBackoffMs doubled per loss in a row, capped. */
  private backoffMs(): number {
    if (this.losses === 0) return 0;
    const first = this.opts.restartBackoffMs ?? 100;
    return Math.min(first * 2 ** (this.losses - 1), this.opts.maxRestartBackoffMs ?? 5_000);
  }

  private live(session: SessionRef): ChannelSession {
    const s = session.sessionId === undefined ? undefined : this.sessions.get(session.sessionId);
    if (s === undefined || s.lost || s.channel.closed) throw new SessionExpiredError(this.name);
    return s;
  }

  private exchange(
    s: ChannelSession,
    msg: JsonRpcRequest,
    handlers: StreamHandlers,
    scope: CallScope,
    asked?: { value: boolean },
  ): Promise<JsonRpcResponse> {
    return new Promise<JsonRpcResponse>((resolve, reject) => {
      const key = idKey(msg.id);
      if (s.pending.has(key)) {
        reject(new CausewayError('internal_error', 'a request id is already in flight on this upstream session'));
        return;
      }
      const meta = isObject(msg.params) && isObject(msg.params._meta) ? msg.params._meta : undefined;
      const token = meta?.progressToken;
      const onAbort = (): void => pending.settle({ error: scope.signal.reason });
      const pending: Pending = {
        method: msg.method,
        handlers,
        progressToken: typeof token === 'string' || typeof token === 'number' ? token : undefined,
        ...(msg.method === 'tasks/result' && isObject(msg.params) && typeof msg.params.taskId === 'string'
          ? { followsTask: msg.params.taskId }
          : {}),
        asked: false,
        outstanding: new Set(),
        settle: (outcome) => {
          if (s.pending.get(key) !== pending) return;
          s.pending.delete(key);
          for (const ask of pending.outstanding) s.asks.delete(ask);
          s.lastUsedAt = Date.now();
          scope.signal.removeEventListener('abort', onAbort);
          if (asked) asked.value = pending.asked;
          if ('response' in outcome) resolve(outcome.response);
          else reject(outcome.error);
        },
      };
      s.pending.set(key, pending);
      s.lastUsedAt = Date.now();
      if (scope.signal.aborted) return onAbort();
      scope.signal.addEventListener('abort', onAbort, { once: true });
      s.channel.send(msg).catch((err: unknown) => pending.settle({ error: err }));
    });
  }

  private oneWay(session: SessionRef, message: JsonRpcNotification | JsonRpcResponse): Promise<void> {
    return this.work.track(false, async () => {
      const s = this.live(session);
      s.lastUsedAt = Date.now();
      await s.channel.send(message);
    });
  }

  private scope(signal: AbortSignal | undefined, timeoutMs: number): CallScope {
    return new CallScope(signal, [this.lifetime], timeoutMs);
  }

  private changed(): void {
    this.opts.onChannels?.(this.sessions.size);
  }
}
