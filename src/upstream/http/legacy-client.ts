// Speaks legacy Streamable HTTP (2024-11-05 .. 2025-11-25) as a client to one upstream [spec §10]:
// the initialize handshake, requests answered as JSON or SSE, upstream pings answered, the
// standalone GET stream, DELETE, and the client's lifecycle (close lets calls finish, destroy
// does not). The handshake is handshake.ts's, a POST and its answer exchange.ts's, reading an
// answer reader.ts's, resuming and keeping up SSE streams streams.ts's, and the HTTP hop the
// upstream's composed client's (compose/). Every failure is a CausewayError (upstream_*),
// SessionExpiredError (404 on a session), or the caller's own abort reason. JSON-RPC ids are sent
// as given; session ids and header values are never logged.

import { InFlight, type InFlightEntry } from '../../in-flight.js';
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { discard } from './body.js';
import { CallScope, ScopeSet } from './call-scope.js';
import { UpstreamHttp } from './compose/index.js';
import { LONG_LIVED, MOVABLE, UpstreamDispatcher, type Response } from './dispatcher.js';
import type { AskingCall, SessionRef, TargetSet, UpstreamSessionClient } from '../core/index.js';
import type { Handler } from './compose/index.js';
import { exchange, postOneWay } from './exchange.js';
import { initializeOn, type HandshakeHost, type HandshakeResult, type InitializeParams } from './handshake.js';
import { NO_CALL, refusal, type Cursor, type Exchange, type Inbound, type StreamHandlers } from './inbound.js';
import { DEFAULT_MAX_EVENT_BYTES } from './reader.js';
import { OutsideAsks, timedRequest, Work, type AskEntry, type RequestResult } from '../core/index.js';
import { connectStream, pumpStream, resumeRequestStream, type StreamContext } from './streams.js';
import type { UpstreamAuthorization } from '../credentials/index.js';

export type { SessionRef } from '../core/index.js';
export type { HandshakeResult } from './handshake.js';
export type { StreamHandlers } from './inbound.js';

export interface UpstreamEndpoint {
  name: string;
  /** The upstream's equivalent URLs; each session lives on one of them. */
  targets: TargetSet;
  headers?: Record<string, string>;
  /** Causeway's own token for the upstream, or the user's, on every request. */
  credentials?: UpstreamAuthorization;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  maxResponseBytes: number;
  /**
   * The upstream's composed client, built from the fields above and shared with its passthrough; without one the client
   * makes (and closes) its own.
   */
  http?: UpstreamHttp;
}

export interface UpstreamClientOptions {
  /** Largest single SSE event; request-scoped streams are also held to maxResponseBytes. */
  maxEventBytes?: number;
  /** Wait before resuming when the upstream sent no `retry:`. */
  defaultRetryMs?: number;
  /** Upper bound on any `retry:` the upstream asks for. */
  maxRetryMs?: number;
  /** Consecutive resumes without progress before giving up. */
  maxResumeAttempts?: number;
  /**
   * Called once per request() with its outcome and duration; not for calls on which the upstream
   * asked the client something (their duration is the client's).
   */
  onRequest?(method: string, result: RequestResult, seconds: number): void;
  /**
   * Where asks from a GET stream go (core/asking-calls.ts, across replicas too); this replica's own calls only without.
   */
  asks?: OutsideAsks;
}

/**
 * A call whose one POST its owner reads itself, as the answer comes (warm/): the handler of that
 * POST, and a call that takes the asks of its session's GET stream meanwhile.
 */
export interface DirectCall extends Handler, AskingCall {
  /** The client is destroyed: the call ends (upstream_unavailable). */
  endLifetime(): void;
  /** Where the client counts the call from post() to settled(): the client's to set and clear. */
  tally: DirectTally | undefined;
}

/** A direct call's places in its client: among the calls in flight, and among its session's asking calls. */
export interface DirectTally {
  readonly direct: InFlightEntry<DirectCall>;
  readonly ask: AskEntry | undefined;
}

/** How a request upstream ended, for its metric. */

export const UPSTREAM_CLIENT_DEFAULTS = Object.freeze({
  maxEventBytes: DEFAULT_MAX_EVENT_BYTES,
  defaultRetryMs: 1000,
  maxRetryMs: 10_000,
  maxResumeAttempts: 5,
});

export class UpstreamClient implements UpstreamSessionClient {
  private readonly endpoint: UpstreamEndpoint;
  private readonly log: Logger;
  private readonly opts: Required<Omit<UpstreamClientOptions, 'onRequest' | 'asks'>>;
  private readonly onRequest: UpstreamClientOptions['onRequest'];
  /** The upstream's composed client, when this client made it (and so closes it). */
  private readonly ownHttp: UpstreamHttp | undefined;
  private readonly dispatcher: UpstreamDispatcher;
  private readonly streams: StreamContext;
  private readonly handshakes: HandshakeHost;
  private readonly lifetime = new ScopeSet();
  /** Standalone streams only: ended when the client starts closing. */
  private readonly quiesce = new ScopeSet();
  private readonly work = new Work();
  /** Direct calls not settled yet; `directIdle` wakes close() when the last one is. */
  private readonly direct = new InFlight<DirectCall>();
  private directIdle: (() => void) | undefined;
  private readonly io: Inbound;
  /** Multi-round calls in flight, by session: who takes an ask from the GET stream. */
  private readonly asking: OutsideAsks;
  private closing: Promise<void> | undefined;

  constructor(endpoint: UpstreamEndpoint, log: Logger, options: UpstreamClientOptions = {}) {
    this.endpoint = endpoint;
    this.log = log;
    this.io = {
      log,
      reply: (session, r, method) => {
        this.respond(session, r).catch((err: unknown) => {
          log.warn({ err, method }, 'could not answer an upstream request');
        });
      },
      // An ask from the GET stream that no handler of the stream's own takes: to a call in flight, or refused.
      outside: (session, r) =>
        this.asking.route(session.sessionId, r, () => this.io.reply(session, refusal(r.id, NO_CALL), r.method)),
    };
    const { onRequest, asks, ...tuning } = options;
    this.asking = asks ?? new OutsideAsks(log);
    this.opts = { ...UPSTREAM_CLIENT_DEFAULTS, ...tuning };
    this.onRequest = onRequest;
    const { name, targets, credentials, connectTimeoutMs, requestTimeoutMs } = endpoint;
    this.ownHttp = endpoint.http
      ? undefined
      : new UpstreamHttp({ connectTimeoutMs, requestTimeoutMs, upstream: { name, targets, credentials } });
    this.dispatcher = new UpstreamDispatcher((endpoint.http ?? this.ownHttp)!, targets, endpoint.headers, name);
    this.streams = {
      upstream: name,
      targets,
      dispatcher: this.dispatcher,
      io: this.io,
      log,
      maxResponseBytes: endpoint.maxResponseBytes,
      maxEventBytes: this.opts.maxEventBytes,
      tuning: this.opts,
    };
    this.handshakes = {
      upstream: name,
      targets: endpoint.targets,
      log,
      exchangeInitialize: (ctx, body) => exchange(this.streams, ctx, 'initialize', body),
      postOneWay: (scope, session, message) => postOneWay(this.streams, scope, session, message),
      terminate: (session) => this.terminate(session),
    };
  }

  hasStandaloneStream(): boolean {
    return true;
  }

  /** The most one answer to a request may hold. */
  get maxResponseBytes(): number {
    return this.endpoint.maxResponseBytes;
  }

  /** The largest SSE event of a request's stream (never more than maxResponseBytes there). */
  get maxEventBytes(): number {
    return this.opts.maxEventBytes;
  }

  /** False while the URL a session lives on is ejected, or is not one of this upstream's. */
  admits(target: string | undefined): boolean {
    return this.endpoint.targets.admits(target ?? this.endpoint.targets.at(0));
  }

  /** A URL's position in the upstream's list, for logs (URLs may carry credentials). */
  targetIndex(target: string | undefined): number {
    return target === undefined ? 0 : this.endpoint.targets.indexOf(target);
  }

  initialize(params: InitializeParams, signal?: AbortSignal, principal?: string): Promise<HandshakeResult> {
    return this.work.track(true, async () => {
      const scope = this.scope(signal, this.endpoint.requestTimeoutMs);
      try {
        return await initializeOn(this.handshakes, params, scope, principal);
      } finally {
        scope.dispose();
      }
    });
  }

  request(
    session: SessionRef,
    msg: JsonRpcRequest,
    handlers: StreamHandlers,
    signal?: AbortSignal,
    extraHeaders?: Record<string, string>,
    /** A longer deadline for calls that wait on a person (multi-round); silence is then no error. */
    timeoutMs?: number,
  ): Promise<JsonRpcResponse> {
    return this.work.track(true, async () => {
      const scope = this.scope(signal, timeoutMs ?? this.endpoint.requestTimeoutMs);
      const ctx: Exchange = { session, handlers, id: msg.id, scope, lenient: false, patient: timeoutMs !== undefined };
      const leave = this.asking.enter(ctx, msg.method);
      this.log.debug({ method: msg.method }, 'upstream request');
      const run = () => exchange(this.streams, ctx, 'post', JSON.stringify(msg), extraHeaders);
      return timedRequest(signal, scope, run, (result, seconds) => {
        leave?.();
        if (!ctx.asked) this.onRequest?.(msg.method, result, seconds);
      });
    });
  }

  /**
   * Sends `call`'s request on its session with the POST read by `call` itself: no scope, stream or
   * promise of the client's. Counted until settled() as the client's work (close waits for it,
   * destroy ends it) and as a call that takes the session's outside asks. False when the client
   * is closing: nothing was sent. Throws, having sent nothing, when the session's URL is not the
   * upstream's. `body` is the JSON-RPC request; the call enforces its own deadline.
   */
  post(call: DirectCall, method: string, body: string, extraHeaders: Record<string, string>): boolean {
    if (this.work.state !== 'open') return false;
    call.tally = { direct: this.direct.add(call), ask: this.asking.add(call, method) };
    try {
      this.dispatcher.post(
        call.session,
        this.dispatcher.headers('post', call.session, extraHeaders),
        body,
        call,
        LONG_LIVED | MOVABLE,
      );
    } catch (err) {
      this.settled(call, method, 'failed', undefined);
      throw err;
    }
    return true;
  }

  /** A direct call is over; `seconds` (its request's) is recorded unless it asked the client something. */
  settled(call: DirectCall, method: string, result: RequestResult, seconds: number | undefined): void {
    const tally = call.tally;
    if (tally === undefined || !this.direct.delete(tally.direct)) return;
    call.tally = undefined;
    if (tally.ask !== undefined) this.asking.remove(tally.ask);
    if (this.onRequest && seconds !== undefined && !call.asked) this.onRequest(method, result, seconds);
    if (this.direct.size === 0) this.directIdle?.();
  }

  /**
   * Follows a call sent earlier on `session` (maybe by another replica) from its stream's event
   * `lastEventId` to its response: GET + Last-Event-ID [L-TR]. `id` is the call's JSON-RPC id.
   * Fails with ResumeRefusedError or SessionExpiredError when the stream cannot be taken up.
   */
  resumeCall(
    session: SessionRef,
    id: RequestId,
    lastEventId: string,
    handlers: StreamHandlers,
    signal: AbortSignal,
    timeoutMs?: number,
  ): Promise<JsonRpcResponse> {
    return this.work.track(true, async () => {
      const scope = this.scope(signal, timeoutMs ?? this.endpoint.requestTimeoutMs);
      const ctx: Exchange = { session, handlers, id, scope, lenient: false, patient: true, asked: true };
      const leave = this.asking.enter(ctx, undefined);
      try {
        return await resumeRequestStream(this.streams, ctx, lastEventId);
      } catch (err) {
        throw scope.settle(err);
      } finally {
        scope.dispose();
        leave?.();
      }
    });
  }

  notify(session: SessionRef, n: JsonRpcNotification): Promise<void> {
    return this.oneWay(session, n);
  }

  respond(session: SessionRef, r: JsonRpcResponse): Promise<void> {
    return this.oneWay(session, r);
  }

  /**
   * `lastEventId`: resume a stream another client of the session read up to there (the upstream replays what followed).
   */
  openStream(
    session: SessionRef,
    handlers: StreamHandlers,
    signal: AbortSignal,
    lastEventId?: string,
  ): Promise<'unsupported' | { done: Promise<void> }> {
    return this.work.track(true, async () => {
      const scope = new CallScope(signal, [this.lifetime, this.quiesce], undefined);
      const cursor: Cursor = { lastEventId, retryMs: undefined };
      let first: Response | 'unsupported';
      try {
        first = await connectStream(this.streams, session, cursor, scope);
      } catch (err) {
        scope.dispose();
        throw scope.settle(err);
      }
      if (first === 'unsupported') {
        scope.dispose();
        return 'unsupported';
      }
      const ctx: Exchange = { session, handlers, id: undefined, scope, lenient: true };
      const done = this.work.register(pumpStream(this.streams, ctx, first, cursor));
      return { done };
    });
  }

  async terminate(session: SessionRef): Promise<void> {
    if (session.sessionId === undefined || this.work.state === 'closed') return;
    await this.work.track(false, async () => {
      const scope = this.scope(undefined, this.endpoint.requestTimeoutMs);
      try {
        const res = await this.dispatcher.send(
          'DELETE',
          session,
          this.dispatcher.headers('delete', session),
          undefined,
          scope.signal,
        );
        void discard(res.body);
        this.log.debug({ status: res.statusCode }, 'upstream session terminated');
      } catch (err) {
        this.log.debug({ err: scope.settle(err) }, 'upstream session termination failed');
      } finally {
        scope.dispose();
      }
    });
  }

  /**
   * Refuses new work, ends standalone streams, lets in-flight calls finish, then closes its own sockets (a shared
   * client is its owner's to close).
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.work.refuseNew();
      this.quiesce.end();
      await this.work.settle();
      while (this.direct.size > 0) await new Promise<void>((resolve) => (this.directIdle = resolve));
      this.work.state = 'closed';
      await this.ownHttp?.close();
    })();
    return this.closing;
  }

  /** Aborts every call and stream now; they reject with upstream_unavailable. */
  async destroy(): Promise<void> {
    this.work.state = 'closed';
    this.quiesce.end();
    this.lifetime.end();
    for (const call of this.direct.values()) call.endLifetime();
    await this.ownHttp?.destroy();
  }

  private async oneWay(session: SessionRef, message: JsonRpcNotification | JsonRpcResponse): Promise<void> {
    return this.work.track(false, async () => {
      const scope = this.scope(undefined, this.endpoint.requestTimeoutMs);
      try {
        await postOneWay(this.streams, scope, session, message);
      } catch (err) {
        throw scope.settle(err);
      } finally {
        scope.dispose();
      }
    });
  }

  private scope(signal: AbortSignal | undefined, timeoutMs: number): CallScope {
    return new CallScope(signal, [this.lifetime], timeoutMs);
  }
}
