// Speaks legacy Streamable HTTP (2024-11-05 .. 2025-11-25) as a client to one upstream [spec §10]:
// the initialize handshake, requests answered as JSON or SSE, upstream pings answered, the
// standalone GET stream, DELETE, and the client's lifecycle (close lets calls finish, destroy
// does not). The initialize handshake is handshake.ts's, the HTTP hop dispatcher.ts's, and
// reading, resuming and keeping up SSE streams streams.ts's. Every failure is a CausewayError (upstream_*), SessionExpiredError (404 on a
// session), or the caller's own abort reason. JSON-RPC ids are sent as given; session ids and
// header values are never logged.

import type { Dispatcher } from 'undici';
import { CausewayError } from '../../errors.js';
import type {
  JsonRpcErrorResponse,
  JsonRpcNotification,
  JsonRpcRequest,
  JsonRpcResponse,
  RequestId,
} from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { checkContentLength, discard, mediaType, readText } from './body.js';
import type { StandingStream } from '../../config/index.js';
import { CallScope, ScopeSet } from './call-scope.js';
import { httpRefusal, readErrorBody, refusalOf, UpstreamDispatcher } from './dispatcher.js';
import {
  SessionExpiredError,
  TargetUnreachableError,
  isValidSessionId,
  type SessionRef,
  type TargetSet,
  type UpstreamSessionClient,
} from '../core/index.js';
import { initializeOn, type HandshakeHost, type HandshakeResult, type InitializeParams } from './handshake.js';
import { NO_CALL, refusal, route, type Cursor, type Exchange, type Inbound, type StreamHandlers } from './inbound.js';
import { badResponse, decodeMessages } from './messages.js';
import { DEFAULT_MAX_EVENT_BYTES } from './sse.js';
import {
  OutsideAsks,
  type OutsideAskOutcome,
  type ReplicaAsks,
  StandingStreams,
  wantsStandingStream,
} from '../replicas/index.js';
import { connectStream, pumpStream, readRequestStream, resumeRequestStream, type StreamContext } from './streams.js';

export type { SessionRef } from '../core/index.js';
export type { HandshakeResult } from './handshake.js';
export type { StreamHandlers } from './inbound.js';
import type { UpstreamAuthorization } from '../credentials/index.js';

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
  onRequest?(method: string, result: 'ok' | 'error' | 'failed' | 'cancelled', seconds: number): void;
  /**
   * Most sessions whose standalone GET stream is held from initialize on, so that requests the
   * upstream sends outside a call are routed or refused at once (replicas/standing-streams.ts); 0: none.
   */
  standingStreams?: number;
  /** Which sessions' streams are held (upstream.standingStream): auto, always or never. */
  standingPolicy?: StandingStream;
  /** With replicas sharing sessions: an ask on a GET stream held here may belong to a call on another replica. */
  replicaAsks?: ReplicaAsks;
  /** Called with where each ask from a GET stream went. */
  onOutsideAsk?(outcome: OutsideAskOutcome): void;
}

export const UPSTREAM_CLIENT_DEFAULTS = Object.freeze({
  standingStreams: 0,
  standingPolicy: 'auto' as StandingStream,
  maxEventBytes: DEFAULT_MAX_EVENT_BYTES,
  defaultRetryMs: 1000,
  maxRetryMs: 10_000,
  maxResumeAttempts: 5,
});


function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

export class UpstreamClient implements UpstreamSessionClient {
  private readonly endpoint: UpstreamEndpoint;
  private readonly log: Logger;
  private readonly opts: Required<Omit<UpstreamClientOptions, 'onRequest' | 'replicaAsks' | 'onOutsideAsk'>>;
  private readonly onRequest: UpstreamClientOptions['onRequest'];
  private readonly onOutsideAsk: UpstreamClientOptions['onOutsideAsk'];
  private readonly dispatcher: UpstreamDispatcher;
  private readonly streams: StreamContext;
  private readonly handshakes: HandshakeHost;
  private readonly lifetime = new ScopeSet();
  /** Standalone streams only: ended when the client starts closing. */
  private readonly quiesce = new ScopeSet();
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly io: Inbound;
  /** Multi-round calls in flight, by session: who takes an ask from the GET stream. */
  private readonly asking: OutsideAsks;
  private readonly replicaAsks: ReplicaAsks | undefined;
  private readonly standing: StandingStreams | undefined;
  private state: 'open' | 'closing' | 'closed' = 'open';
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
      outside: (session, r) => this.outside(session, r),
    };
    const { onRequest, replicaAsks, onOutsideAsk, ...tuning } = options;
    this.onOutsideAsk = onOutsideAsk;
    this.asking = new OutsideAsks(log);
    this.replicaAsks = replicaAsks;
    replicaAsks?.register(endpoint.name, this.asking);
    this.opts = { ...UPSTREAM_CLIENT_DEFAULTS, ...tuning };
    this.onRequest = onRequest;
    this.dispatcher = new UpstreamDispatcher(endpoint);
    this.streams = {
      upstream: endpoint.name,
      dispatcher: this.dispatcher,
      io: this.io,
      log,
      maxResponseBytes: endpoint.maxResponseBytes,
      tuning: this.opts,
    };
    this.handshakes = {
      targets: endpoint.targets,
      log,
      exchangeInitialize: (ctx, body) => this.exchange(ctx, 'initialize', body),
      postOneWay: (scope, session, message) => this.postOneWay(scope, session, message),
      terminate: (session) => this.terminate(session),
    };
    if (this.opts.standingStreams > 0) {
      this.standing = new StandingStreams(endpoint.name, (session, handlers, signal) => this.openStream(session, handlers, signal, undefined, true), this.opts.standingStreams, log);
    }
  }

  hasStandaloneStream(): boolean {
    return true;
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
    return this.track(true, async () => {
      const scope = this.scope(signal, this.endpoint.requestTimeoutMs);
      try {
        const hs = await initializeOn(this.handshakes, params, scope, principal);
        if (this.standing && wantsStandingStream(this.opts.standingPolicy, params.capabilities)) {
          // Servers ask right after initialize, or in the first call: the stream should be up by then.
          // A server slow to answer a GET holds the session's opening up to connectTimeoutMs, no longer.
          const up = this.standing.hold({ sessionId: hs.sessionId, protocolVersion: hs.protocolVersion, target: hs.target, principal });
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([up, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.endpoint.connectTimeoutMs)))]);
          clearTimeout(timer);
        }
        return hs;
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
    return this.track(true, async () => {
      const scope = this.scope(signal, timeoutMs ?? this.endpoint.requestTimeoutMs);
      const ctx: Exchange = { session, handlers, id: msg.id, scope, lenient: false, patient: timeoutMs !== undefined };
      const leave = this.asking.enter(ctx, msg.method);
      const started = performance.now();
      let result: 'ok' | 'error' | 'failed' | 'cancelled' = 'failed';
      try {
        this.log.debug({ method: msg.method }, 'upstream request');
        const response = await this.exchange(ctx, 'post', JSON.stringify(msg), extraHeaders);
        result = 'error' in response ? 'error' : 'ok';
        return response;
      } catch (err) {
        if (signal?.aborted) result = 'cancelled';
        throw scope.settle(err);
      } finally {
        scope.dispose();
        leave?.();
        if (this.onRequest && !ctx.asked) this.onRequest(msg.method, result, (performance.now() - started) / 1000);
      }
    });
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
    return this.track(true, async () => {
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

  /** `lastEventId`: resume a stream another client of the session read up to there (the upstream replays what followed). */
  openStream(
    session: SessionRef,
    handlers: StreamHandlers,
    signal: AbortSignal,
    lastEventId?: string,
    /** The standing stream's own (replicas/standing-streams.ts): every other one shares it while it is held. */
    standing = false,
  ): Promise<'unsupported' | { done: Promise<void> }> {
    return this.track(true, async () => {
      // An upstream allows one GET stream per session: a listen hears the one held for asks.
      const shared = standing || lastEventId !== undefined ? undefined : this.standing?.share(session.sessionId, handlers, signal);
      if (shared) return shared;
      const scope = new CallScope(signal, [this.lifetime, this.quiesce], undefined);
      const cursor: Cursor = { lastEventId, retryMs: undefined };
      let first: Dispatcher.ResponseData | 'unsupported';
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
      const done = this.register(pumpStream(this.streams, ctx, first, cursor));
      return { done };
    });
  }

  async terminate(session: SessionRef): Promise<void> {
    if (session.sessionId === undefined || this.state === 'closed') return;
    this.standing?.drop(session.sessionId);
    await this.track(false, async () => {
      const scope = this.scope(undefined, this.endpoint.requestTimeoutMs);
      try {
        const res = await this.dispatcher.send('DELETE', session, this.dispatcher.headers('delete', session), undefined, scope.signal);
        void discard(res.body);
        this.log.debug({ status: res.statusCode }, 'upstream session terminated');
      } catch (err) {
        this.log.debug({ err: scope.settle(err) }, 'upstream session termination failed');
      } finally {
        scope.dispose();
      }
    });
  }

  /** Refuses new work, ends standalone streams, lets in-flight calls finish, then closes sockets. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.state === 'open') this.state = 'closing';
      this.standing?.dropAll();
      this.quiesce.end();
      while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
      this.state = 'closed';
      await this.dispatcher.close();
    })();
    return this.closing;
  }

  /** Aborts every call and stream now; they reject with upstream_unavailable. */
  async destroy(): Promise<void> {
    this.state = 'closed';
    this.standing?.dropAll();
    this.quiesce.end();
    this.lifetime.end();
    await this.dispatcher.destroy();
  }

  /** An ask from the GET stream, for the one asking call in flight on the session (on any replica), else refused. */
  private outside(session: SessionRef, r: JsonRpcRequest): void {
    const settle = (outcome: OutsideAskOutcome): void => {
      if (outcome === 'refused') this.io.reply(session, refusal(r.id, NO_CALL), r.method);
      this.onOutsideAsk?.(outcome);
    };
    if (this.replicaAsks && session.sessionId !== undefined) void this.replicaAsks.route(this.endpoint.name, session.sessionId, r).then(settle);
    else settle(this.asking.give(session.sessionId, r) ? 'given' : 'refused');
  }

  private async exchange(
    ctx: Exchange,
    kind: 'initialize' | 'post',
    body: string,
    extraHeaders?: Record<string, string>,
  ): Promise<JsonRpcResponse> {
    const headers =
      kind === 'initialize' ? this.dispatcher.headers('initialize', undefined) : this.dispatcher.headers('post', ctx.session, extraHeaders);
    const res = await this.dispatcher.send('POST', ctx.session, headers, body, ctx.scope.signal, { longLived: ctx.patient === true, movable: true });
    if (kind === 'initialize') {
      // A URL that cannot take a session now (overloaded, starting, behind a dead gateway) has
      // opened none: another URL of the upstream may.
      if (res.statusCode === 502 || res.statusCode === 503 || res.statusCode === 504) {
        void discard(res.body);
        if (ctx.session.target !== undefined) this.endpoint.targets.failed(ctx.session.target);
        throw new TargetUnreachableError(this.endpoint.name, httpRefusal(res.statusCode));
      }
      const sessionId = firstHeader(res.headers['mcp-session-id']);
      if (sessionId !== undefined && !isValidSessionId(sessionId)) {
        void discard(res.body);
        throw badResponse('malformed Mcp-Session-Id');
      }
      ctx.session = { ...ctx.session, sessionId };
    }
    return this.answer(ctx, res);
  }

  private async answer(ctx: Exchange, res: Dispatcher.ResponseData): Promise<JsonRpcResponse> {
    const status = res.statusCode;
    if (status === 404 && ctx.session.sessionId !== undefined) {
      void discard(res.body);
      throw new SessionExpiredError(this.endpoint.name);
    }
    if (status >= 400) return this.httpError(ctx, res);
    if (status < 200 || status >= 300 || status === 202 || status === 204) {
      void discard(res.body);
      throw badResponse(`HTTP ${status} to a request`);
    }
    const type = mediaType(res.headers['content-type']);
    if (type === 'application/json') {
      checkContentLength(res.body, res.headers['content-length'], this.endpoint.maxResponseBytes);
      const answer = route(this.io, ctx, decodeMessages(await readText(res.body, this.endpoint.maxResponseBytes)));
      if (answer === undefined) throw badResponse('no response carries the request id');
      return answer;
    }
    if (type === 'text/event-stream') return readRequestStream(this.streams, ctx, res);
    void discard(res.body);
    throw badResponse(`unexpected content-type ${JSON.stringify(type.slice(0, 80))}`);
  }

  /** A 4xx with a JSON-RPC error body is the upstream's in-band answer; anything else is a refusal. */
  private async httpError(ctx: Exchange, res: Dispatcher.ResponseData): Promise<JsonRpcErrorResponse> {
    const status = res.statusCode;
    const rpc = await readErrorBody(res);
    // -32022 is 2026-07-28's: a legacy session's request refused with it is an upstream now modern (era.ts).
    if (status < 500 && rpc !== undefined && ctx.id !== undefined && rpc.error.code !== -32022) {
      return { jsonrpc: '2.0', id: ctx.id, error: rpc.error };
    }
    throw httpRefusal(status, rpc?.error.message.slice(0, 200), rpc?.error);
  }

  private async oneWay(session: SessionRef, message: JsonRpcNotification | JsonRpcResponse): Promise<void> {
    return this.track(false, async () => {
      const scope = this.scope(undefined, this.endpoint.requestTimeoutMs);
      try {
        await this.postOneWay(scope, session, message);
      } catch (err) {
        throw scope.settle(err);
      } finally {
        scope.dispose();
      }
    });
  }

  /** [L-TR] A notification or response POST is answered 202 (200 and 204 are tolerated). */
  private async postOneWay(
    scope: CallScope,
    session: SessionRef,
    message: JsonRpcNotification | JsonRpcResponse,
  ): Promise<void> {
    const res = await this.dispatcher.send('POST', session, this.dispatcher.headers('post', session), JSON.stringify(message), scope.signal, { movable: true });
    const status = res.statusCode;
    if (status === 202 || status === 200 || status === 204) {
      await discard(res.body);
      return;
    }
    if (status === 404 && session.sessionId !== undefined) {
      void discard(res.body);
      throw new SessionExpiredError(this.endpoint.name);
    }
    throw await refusalOf(res);
  }

  private scope(signal: AbortSignal | undefined, timeoutMs: number): CallScope {
    return new CallScope(signal, [this.lifetime], timeoutMs);
  }

  /** New calls are refused once closing; one-way sends still go so in-flight calls can finish. */
  private track<T>(isNewWork: boolean, fn: () => Promise<T>): Promise<T> {
    if (this.state === 'closed' || (isNewWork && this.state === 'closing')) {
      return Promise.reject(new CausewayError('upstream_unavailable', 'Upstream client is closed'));
    }
    return this.register(fn());
  }

  private register<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    const forget = (): void => {
      this.inflight.delete(p);
    };
    p.then(forget, forget);
    return p;
  }
}
