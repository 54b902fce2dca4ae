// One warm call (lane.ts took it): a single object that is the request's whole way upstream and
// back. It sends the legacy request on the session through the upstream's composed client and is
// the handler of that POST: the JSON answer or the SSE stream is read as it comes, with no body
// stream, promise, signal or closure per request. The answer is translated and written at once.
//
// What most calls never meet is made only when they meet it: an ask of the client hands the
// call to the multi-round bridge as if it had sent it (mrtr's adopt), from there the bridge's
// rounds and deadlines rule; a stream that ends before the answer is followed with GET +
// Last-Event-ID as the session client follows any; an upstream that lost the session (404),
// could not be reached, or refuses the era hands the request back to the pipeline, nothing having
// been done upstream. The call's deadline is the upstream's request timeout, one timer.

import { causewayError, CausewayError } from '../errors.js';
import { isErrorResponse, type JsonRpcErrorObject, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse, type RequestId } from '../jsonrpc.js';
import { sendJson } from '../egress/index.js';
import type { ModernRequest } from '../envelope/index.js';
import type { AnswerOutcome, ResultType } from '../metrics/index.js';
import { adopt, heldCallTimeoutMs, listenerFor, nextRound, urlElicitationRound, type RoundExchange, type RoundResult } from '../mrtr/index.js';
import { sessionRef, type PooledSession } from '../pool/index.js';
import { answerFailure, modernAnswer, type AccessNotes, type Answered } from '../routing/index.js';
import {
  badResponse,
  callHeaders,
  cancelUpstream,
  decodeMessages,
  httpRefusal,
  postedTo,
  isConnectionDrop,
  isEraRefusal,
  legacyParams,
  losesSession,
  mediaType,
  REFUSAL_BODY_LIMIT,
  SseParser,
  SessionExpiredError,
  TargetUnreachableError,
  tooLarge,
  toUpstreamError,
  UPSTREAM_CLIENT_DEFAULTS,
  type CallObserver,
  type DirectCall,
  type DirectTally,
  type RequestResult,
  type SessionRef,
  type SseEvent,
  type StreamHandlers,
  type UpstreamMessage,
} from '../upstream/index.js';
import type { PendingCall } from '../mrtr/index.js';
import type { Fallback, WarmExchange, WarmUpstream } from './exchange.js';

type Controller = Parameters<NonNullable<DirectCall['onRequestStart']>>[0];
type Headers = Parameters<NonNullable<DirectCall['onResponseStart']>>[2];

/** How the answer is read: by its status and content type. */
const enum Reading {
  Waiting,
  Json,
  Sse,
  /**
   * A 4xx or 5xx: its JSON-RPC error, if it has one, up to ERROR_BODY_LIMIT; or a lost session
   * (a 400 or 404 that says so), and the request is handed back.
   */
  Refusal,
}

const ERROR_BODY_LIMIT = REFUSAL_BODY_LIMIT;

export class WarmCall<X extends WarmExchange> implements DirectCall, StreamHandlers {
  readonly session: SessionRef;
  readonly handlers: StreamHandlers = this;
  asked = false;
  readonly span = undefined;
  tally: DirectTally | undefined = undefined;
  private readonly id: RequestId;
  private readonly started = performance.now();
  private timer: NodeJS.Timeout;
  private controller: Controller | undefined;
  /** undici is done with the POST (its end or its error came). */
  private closed = false;
  /** Bytes that came after the answer, on a stream the upstream left open. */
  private after = 0;
  private reading = Reading.Waiting;
  private status = 0;
  private bytes = 0;
  private chunks: Buffer[] | undefined;
  private parser: SseParser | undefined;
  /** The stream's cursor, and the ids of the events read (the last two, and whether one had none). */
  private readonly events = { previous: undefined as string | undefined, last: undefined as string | undefined, unnamed: false, count: 0 };
  /** Where the stream stands, for a GET with Last-Event-ID: the last event id it carried. */
  private lastEventId: string | undefined;
  private retryMs: number | undefined;
  /** The upstream call is over (answered, failed, stopped): nothing read later counts. */
  private over = false;
  /** Why the request was stopped before undici started it; it is aborted as it starts. */
  private stopped: Error | undefined;
  /** Once the upstream asked the client something: the bridge's PendingCall, and the observer feeding it. */
  private held: { pending: PendingCall; observer: CallObserver } | undefined;
  /** A stream followed again (GET + Last-Event-ID): stopped with the call. */
  private resumed: AbortController | undefined;

  constructor(
    private readonly lane: WarmUpstream,
    private readonly ex: X,
    readonly request: ModernRequest,
    private readonly pooled: PooledSession,
    private readonly fallback: Fallback<X>,
  ) {
    this.session = sessionRef(pooled);
    this.id = lane.deps.ids.requestId();
    this.timer = setTimeout(expire, lane.deps.bridge.upstreamTimeoutMs, this);
  }

  get access() {
    return this.ex.access;
  }

  get notes(): AccessNotes {
    return this.ex.tag.notes;
  }

  get res() {
    return this.ex.res;
  }

  get log() {
    return this.ex.log;
  }

  send(): void {
    const { request, lane } = this;
    const { deps } = lane;
    const notes = this.notes;
    notes.upstream = deps.upstreamName;
    notes.session = 'reused';
    notes.warm = true;
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.id, method: request.method, params: legacyParams(request.params, undefined) });
    this.ex.goneTo = this;
    let sent: boolean;
    try {
      sent = lane.client.post(this, request.method, body, callHeaders(request.method, request.name, deps.forward.pick(this.ex.headers)));
    } catch (err) {
      if (!(err instanceof TargetUnreachableError)) return this.fail(toUpstreamError(err));
      return this.lost(err);
    }
    if (!sent) this.handBack();
  }

  // The POST's handler (undici's dispatch API).

  onRequestStart(controller: Controller): void {
    this.controller = controller;
    if (this.stopped !== undefined) controller.abort(this.stopped);
  }

  onResponseStart(controller: Controller, status: number, headers: Headers): void {
    if (this.over) return;
    this.status = status;
    const max = this.lane.client.maxResponseBytes;
    if (status >= 400) {
      this.reading = Reading.Refusal;
      this.chunks = [];
      return;
    }
    if (status < 200 || status >= 300 || status === 202 || status === 204) return this.failRead(controller, badResponse(`HTTP ${status} to a request`));
    const type = mediaType(headers['content-type']);
    if (type === 'application/json') {
      const length = headers['content-length'];
      if (length !== undefined && Number(Array.isArray(length) ? length[0] : length) > max) return this.failRead(controller, tooLarge(max));
      this.reading = Reading.Json;
      this.chunks = [];
    } else if (type === 'text/event-stream') {
      this.reading = Reading.Sse;
      this.parser = new SseParser({ maxEventBytes: Math.min(this.lane.client.maxEventBytes, max) });
    } else this.failRead(controller, badResponse(`unexpected content-type ${JSON.stringify(type.slice(0, 80))}`));
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.over && this.reading !== Reading.Refusal) {
      // Normally just the stream's end follows the answer; a stream left running is dropped.
      if ((this.after += chunk.length) > ERROR_BODY_LIMIT) controller.abort(badResponse('the stream went on after the response'));
      return;
    }
    this.bytes += chunk.length;
    switch (this.reading) {
      case Reading.Json:
        if (this.bytes > this.lane.client.maxResponseBytes) return this.failRead(controller, tooLarge(this.lane.client.maxResponseBytes));
        this.chunks!.push(chunk);
        return;
      case Reading.Sse:
        if (this.bytes > this.lane.client.maxResponseBytes) return this.failRead(controller, tooLarge(this.lane.client.maxResponseBytes));
        try {
          for (const ev of this.parser!.push(chunk)) if (this.event(ev)) return;
        } catch (err) {
          this.failRead(controller, err);
        }
        return;
      case Reading.Refusal:
        if (this.bytes <= ERROR_BODY_LIMIT) this.chunks!.push(chunk);
        return;
      default:
        return;
    }
  }

  onResponseEnd(): void {
    this.closed = true;
    if (this.over) return;
    try {
      switch (this.reading) {
        case Reading.Json:
          this.messages(decodeMessages(Buffer.concat(this.chunks!).toString('utf8')));
          if (!this.over) this.fail(badResponse('no response carries the request id'));
          return;
        case Reading.Sse:
          for (const ev of this.parser!.end()) if (this.event(ev)) return;
          return this.streamEnded(undefined);
        case Reading.Refusal:
          return this.refused();
        default:
          return;
      }
    } catch (err) {
      this.fail(err);
    }
  }

  onResponseError(_controller: Controller, err: Error): void {
    this.closed = true;
    if (this.over) return;
    if (err instanceof TargetUnreachableError) return this.lost(err);
    // The upstream wants the user's own token (refused before it did anything): the pipeline asks the user to sign in.
    if (err instanceof CausewayError && err.reason === 'upstream_authorization_required') return this.handBack();
    if (this.reading === Reading.Sse && isConnectionDrop(err)) return this.streamEnded(err);
    this.fail(toUpstreamError(err));
  }

  /** The client is destroyed. */
  endLifetime(): void {
    this.stop(new CausewayError('upstream_unavailable', 'Upstream client was shut down'), false, 'failed');
  }

  // What the stream carries (also a followed stream's, and the session's outside asks).

  beforeEvent(id: string | undefined): void {
    if (id !== undefined) this.lastEventId = id;
    if (this.held) return this.held.observer.onEvent?.(id);
    const e = this.events;
    if (id === undefined) e.unnamed = true;
    e.previous = e.last;
    e.last = id;
    e.count += 1;
  }

  onNotification(n: JsonRpcNotification): void {
    // Progress and logs go nowhere: the request asked for neither (the lane takes no other).
    if (n.method === 'notifications/progress' || n.method === 'notifications/message') return;
    if (this.held) this.held.observer.onOtherNotification?.(n);
    else this.lane.deps.subscriptions.publishChange(this.pooled, n);
  }

  onServerRequest(r: JsonRpcRequest): void {
    if (r.method === 'ping') {
      this.lane.client.respond(this.session, { jsonrpc: '2.0', id: r.id, result: {} }).catch((err: unknown) => this.log.warn({ err, method: r.method }, 'could not answer an upstream request'));
      return;
    }
    this.asked = true;
    (this.held ?? this.adopt()).observer.onServerRequest?.(r);
  }

  /** One SSE event; true once the call is over. */
  private event(ev: SseEvent): boolean {
    if (ev.retry !== undefined) this.retryMs = ev.retry;
    this.beforeEvent(ev.id);
    if (ev.data === '' || (ev.event !== undefined && ev.event !== 'message')) return false;
    this.messages(decodeMessages(ev.data));
    return this.over;
  }

  private messages(messages: UpstreamMessage[]): void {
    for (const m of messages) {
      if (m.kind === 'notification') this.deliver(() => this.onNotification(m.message), m.message.method);
      else if (m.kind === 'request') this.deliver(() => this.onServerRequest(m.message), m.message.method);
      else if (m.message.id === this.id) this.answered(m.message);
      else if (m.message.id === undefined || m.message.id === null) {
        if (!('error' in m.message)) throw badResponse('response without id');
        this.answered({ jsonrpc: '2.0', id: this.id, error: m.message.error });
      } else this.log.debug('dropping an upstream response for another request');
    }
  }

  private deliver(fn: () => void, method: string): void {
    try {
      fn();
    } catch (err) {
      this.log.error({ err, method }, 'upstream message handler threw');
    }
  }

  // How the upstream call ends.

  /** The upstream's answer to the call. */
  private answered(response: JsonRpcResponse): void {
    if (this.over) return;
    this.end(isErrorResponse(response) ? 'error' : 'ok');
    if (this.held) return this.held.pending.settle(response);
    let result: RoundResult = { kind: 'upstream', response };
    try {
      // A 2025-11-25 -32042 becomes a url-mode round, as in the bridge.
      if (isErrorResponse(response) && response.error.code === -32042) result = urlElicitationRound({ request: this.request, principal: this.ex.principal }, this.lane.deps.bridge, result);
    } catch (err) {
      return this.failed(err);
    }
    this.reply(result);
  }

  /** A 4xx with a JSON-RPC error body is the upstream's in-band answer; anything else is a refusal. */
  private refused(): void {
    const text = this.bytes > ERROR_BODY_LIMIT ? undefined : Buffer.concat(this.chunks!).toString('utf8');
    // The session is gone (core/lost-session.ts): nothing ran, so the request goes on a new one.
    if (this.session.sessionId !== undefined && losesSession(this.status, text, this.id)) {
      return this.lost(new SessionExpiredError(this.lane.deps.upstreamName));
    }
    const rpc = this.errorBody(text);
    if (this.status < 500 && rpc !== undefined && rpc.code !== -32022) return this.answered({ jsonrpc: '2.0', id: this.id, error: rpc });
    const to = postedTo(this.lane.deps.upstreamName, this.session.target);
    const err = httpRefusal(this.status, rpc?.message.slice(0, 200), rpc, to);
    // An upstream that refuses the era (upgraded in place) did nothing: the pipeline finds its era again.
    if (this.lane.deps.modern !== undefined && isEraRefusal(err)) return this.handBack();
    this.fail(err);
  }

  private errorBody(text: string | undefined): JsonRpcErrorObject | undefined {
    if (text === undefined) return undefined;
    try {
      const [m] = decodeMessages(text);
      return m?.kind === 'response' && 'error' in m.message ? m.message.error : undefined;
    } catch {
      return undefined;
    }
  }

  /** The stream ended or dropped before the answer: followed after its event id, else the call failed. */
  private streamEnded(dropped: unknown): void {
    const lastEventId = this.lastEventId;
    if (lastEventId === undefined || lastEventId === '') return this.fail(dropped ?? badResponse('SSE stream ended without a response'));
    const wait = Math.min(this.retryMs ?? UPSTREAM_CLIENT_DEFAULTS.defaultRetryMs, UPSTREAM_CLIENT_DEFAULTS.maxRetryMs);
    const follow = (this.resumed = new AbortController());
    setTimeout(() => {
      if (follow.signal.aborted) return;
      this.lane.client.resumeCall(this.session, this.id, lastEventId, this, follow.signal, this.held ? heldCallTimeoutMs(this.lane.deps.bridge) : undefined).then(
        (response) => this.answered(response),
        (err: unknown) => {
          if (!this.over) this.fail(err);
        },
      );
    }, wait).unref();
  }

  /** Failed, upstream: the client gets the error (the bridge's round, once the call is held). */
  private fail(err: unknown): void {
    this.stop(err, false, 'failed');
  }

  private failRead(controller: Controller, err: unknown): void {
    this.controller ??= controller;
    this.fail(err);
  }

  /**
   * Stops the upstream request: `cancel` tells the upstream (notifications/cancelled), else it is
   * only let go. The client hears `err` unless the call is held (the bridge answers then).
   */
  private stop(err: unknown, cancel: boolean, result: RequestResult = 'cancelled'): void {
    if (this.over) return;
    this.end(result);
    this.stopped = err as Error;
    if (!this.closed) this.controller?.abort(err as Error);
    this.resumed?.abort();
    if (cancel) cancelUpstream(this.lane.client, this.session, this.id, this.log);
    if (this.held) return this.held.pending.fail(err);
    this.failed(err);
  }

  /** The upstream request is over: its deadline, its count and its metric (none when it was never run: `ran` false). */
  private end(result: RequestResult, ran = true): void {
    this.over = true;
    clearTimeout(this.timer);
    if (this.ex.goneTo === this) this.ex.goneTo = undefined;
    this.lane.client.settled(this, this.request.method, result, ran ? (performance.now() - this.started) / 1000 : undefined);
  }

  /**
   * Past the call's deadline (expire, below): working past the upstream's timeout, as the bridge's
   * round sees it, is cancelled; a held call's own deadline only lets it go, as the session
   * client's deadline lets a call go.
   */
  deadline(): void {
    this.stop(causewayError('upstream_timeout'), this.held === undefined);
  }

  /** The client went before the answer: the call is cancelled upstream. (Once held, the bridge hears it on the signal.) */
  clientGone(): void {
    if (!this.held) this.stop(new Error('the client went away'), true);
  }

  /**
   * The upstream forgot the session, or its URL could not be reached, before the call ran: the
   * session is replaced as the pool replaces any lost one, and the pipeline serves the request.
   */
  private lost(err: SessionExpiredError): void {
    this.settleUnsent();
    this.lane.deps.pool.replaceLost(this.pooled, err).then(
      () => this.handBack(),
      (e: unknown) => this.failed(e),
    );
  }

  /** Nothing was done upstream: the pipeline serves the request from the start. */
  private handBack(): void {
    this.settleUnsent();
    this.notes.warm = undefined;
    // answerFailure logs what is not a CausewayError.
    this.fallback(this.ex).catch((err: unknown) => this.failed(err));
  }

  /** The call ends having sent nothing the upstream ran: no metric of an upstream request. */
  private settleUnsent(): void {
    if (!this.over) this.end('failed', false);
  }

  // The call held by the multi-round bridge, from its first ask.

  private adopt(): { pending: PendingCall; observer: CallObserver } {
    const { deps } = this.lane;
    const ex = this.roundView();
    const held = adopt(ex, this.session, deps.bridge, {
      id: this.id,
      stop: { cancel: () => this.stop(causewayError('upstream_timeout', 'The call was cancelled'), true), detach: () => this.stop(causewayError('upstream_timeout', 'The call was let go'), false) },
      events: this.events,
    });
    this.held = held;
    // From here the bridge's rounds rule: the call lives as long as a held call may.
    clearTimeout(this.timer);
    this.timer = setTimeout(expire, heldCallTimeoutMs(deps.bridge), this);
    if (this.ex.goneTo === this) this.ex.goneTo = undefined;
    nextRound(held.pending, deps.bridge, listenerFor(ex), ex.signal)
      .then((r) => urlElicitationRound(ex, deps.bridge, r))
      .then(
        (r) => this.reply(r),
        (err: unknown) => this.failed(err),
      );
    return held;
  }

  private roundView(): RoundExchange {
    const { deps } = this.lane;
    const { request, ex, pooled } = this;
    return {
      request,
      principal: ex.principal,
      signal: ex.signal,
      log: ex.log,
      send: () => undefined,
      onChange: (n) => deps.subscriptions.publishChange(pooled, n),
      upstreamHeaders: {},
    };
  }

  // The client's answer.

  private reply(r: RoundResult): void {
    const { request } = this;
    let answered: Answered;
    if (r.kind === 'upstream') {
      const { status, body } = modernAnswer(this, this.lane.deps, this.pooled, r.response);
      sendJson(this.ex.res, status, body);
      answered = isErrorResponse(r.response) ? 'upstream_error' : 'complete';
    } else {
      sendJson(this.ex.res, 200, { jsonrpc: '2.0', id: request.id, result: r.kind === 'input' ? r.result : r.created });
      answered = r.kind === 'input' ? 'input_required' : 'task';
    }
    this.measured(answered === 'upstream_error' ? 'error' : answered, answered === 'upstream_error' ? 'upstream_error' : 'ok');
  }

  private failed(err: unknown): void {
    this.measured('error', answerFailure(this, this.ex.gone, err));
  }

  private measured(resultType: ResultType, outcome: AnswerOutcome): void {
    const { request } = this;
    this.notes.resultType = resultType;
    this.lane.deps.metrics.answered(request.method, request.name, resultType, outcome, (performance.now() - this.started) / 1000);
  }
}

/** A call's deadline, as a timer calls it (no closure per call). */
function expire(call: { deadline(): void }): void {
  call.deadline();
}
