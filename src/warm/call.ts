// One warm call (lane.ts took it): a single object that is the request's whole way upstream and
// back. It sends the legacy request on the session through the upstream's composed client and is
// the handler of that POST, an AnswerReader (the upstream's one reader of answers): the JSON
// answer or the SSE stream is read and routed as it comes, with no body stream, promise, signal or
// closure per request. The answer is translated and written at once (answer.ts).
//
// What most calls never meet is made only when they meet it: an ask of the client hands the
// call to the multi-round bridge as if it had sent it (mrtr's adopt), from there the bridge's
// rounds and deadlines rule; a stream that ends before the answer is followed with GET +
// Last-Event-ID as the session client follows any; an upstream that lost the session (404),
// could not be reached, or refuses the era hands the request back to the pipeline, nothing having
// been done upstream. The call's deadline is the upstream's request timeout, in the lane's one list (deadlines.ts).

import { causewayError, CausewayError } from '../errors.js';
import { isErrorResponse, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse } from '../jsonrpc.js';
import type { RequestId } from '../jsonrpc.js';
import type { ModernRequest } from '../envelope/index.js';
import { adopt, eventRead, heldCallTimeoutMs, listenerFor, nextRound, urlElicitationRound } from '../mrtr/index.js';
import type { EventIds, PendingCall, RoundResult } from '../mrtr/index.js';
import { sessionRef, type PooledSession } from '../pool/index.js';
import {
  badResponse,
  callHeaders,
  cancelUpstream,
  isEraRefusal,
  legacyParams,
  postedTo,
  SessionExpiredError,
  toUpstreamError,
  UPSTREAM_CLIENT_DEFAULTS,
  type AnswerLimits,
  type CallObserver,
  type DirectCall,
  type DirectTally,
  type RequestResult,
  type SessionRef,
  type StreamHandlers,
} from '../upstream/index.js';
import type { Due } from '../deadlines.js';
import { WarmAnswer } from './answer.js';
import type { Fallback, WarmExchange, WarmUpstream } from './exchange.js';

type Controller = Parameters<NonNullable<DirectCall['onRequestStart']>>[0];

export class WarmCall<X extends WarmExchange> extends WarmAnswer<X> implements DirectCall, StreamHandlers, Due {
  readonly session: SessionRef;
  readonly handlers: StreamHandlers = this;
  asked = false;
  tally: DirectTally | undefined = undefined;
  readonly id: RequestId;
  protected readonly ctx = this;
  protected readonly io = this;
  protected readonly limits: AnswerLimits;
  /** Its place in the lane's deadlines (the upstream's request timeout), until it is over or held. */
  dueAt: number | undefined = undefined;
  dueBefore: Due | undefined = undefined;
  dueAfter: Due | undefined = undefined;
  /** A held call's own deadline, once the bridge holds it. */
  private timer: NodeJS.Timeout | undefined = undefined;
  /** The ids of the events read (mrtr's EventIds). */
  private seen: EventIds | undefined = undefined;
  /** Why the request was stopped before undici started it; it is aborted as it starts. */
  private stopped: Error | undefined;
  /** Once the upstream asked the client something: the bridge's PendingCall, and the observer feeding it. */
  private held: { pending: PendingCall; observer: CallObserver } | undefined;
  /** A stream followed again (GET + Last-Event-ID): stopped with the call. */
  private resumed: AbortController | undefined;

  constructor(
    lane: WarmUpstream,
    ex: X,
    request: ModernRequest,
    pooled: PooledSession,
    private readonly fallback: Fallback<X>,
  ) {
    super(lane, ex, request, pooled);
    this.session = sessionRef(pooled);
    this.limits = lane.client;
    this.id = lane.deps.ids.requestId();
    lane.deadlines.add(this);
  }

  send(): void {
    const { request, lane } = this;
    const { deps } = lane;
    const notes = this.notes;
    notes.upstream = deps.upstreamName;
    notes.session = 'reused';
    notes.warm = true;
    const params = legacyParams(request.params, undefined);
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.id, method: request.method, params });
    const headers = callHeaders(request.method, request.name, deps.forward.pick(this.ex.headers));
    this.ex.goneTo = this;
    let sent: boolean;
    try {
      sent = lane.client.post(this, request.method, body, headers);
    } catch (err) {
      return this.onFailure(err);
    }
    if (!sent) this.handBack();
  }

  override onRequestStart(controller: Controller): void {
    this.controller = controller;
    if (this.stopped !== undefined) controller.abort(this.stopped);
  }

  /** The client is destroyed. */
  endLifetime(): void {
    this.stop(new CausewayError('upstream_unavailable', 'Upstream client was shut down'), false, 'failed');
  }

  // What the stream carries (a followed stream's, the session's outside asks), routed by the reader; pings: reply().

  beforeEvent(id: string | undefined): void {
    if (this.held) return this.held.observer.onEvent?.(id);
    this.seen = eventRead(this.seen, id);
  }

  onNotification(n: JsonRpcNotification): void {
    // Progress and logs go nowhere: the request asked for neither (the lane takes no other).
    if (n.method === 'notifications/progress' || n.method === 'notifications/message') return;
    if (this.held) this.held.observer.onOtherNotification?.(n);
    else this.lane.deps.subscriptions.publishChange(this.pooled, n);
  }

  onServerRequest(r: JsonRpcRequest): void {
    if (r.method === 'ping') return this.reply(this.session, { jsonrpc: '2.0', id: r.id, result: {} }, r.method);
    this.asked = true;
    (this.held ?? this.adopt()).observer.onServerRequest?.(r);
  }

  /** Answers one of the upstream's requests on the session. */
  reply(session: SessionRef, r: JsonRpcResponse, method: string): void {
    const warn = (err: unknown): void => this.log.warn({ err, method }, 'could not answer an upstream request');
    this.lane.client.respond(session, r).catch(warn);
  }

  // How the upstream call ends.

  protected refusedBy() {
    const { upstreamName } = this.lane.deps;
    return { upstream: upstreamName, to: postedTo(upstreamName, this.session.target) };
  }

  /** The upstream's answer to the call. */
  protected onAnswer(response: JsonRpcResponse): void {
    if (this.over) return;
    this.end(isErrorResponse(response) ? 'error' : 'ok');
    if (this.held) return this.held.pending.settle(response);
    let result: RoundResult = { kind: 'upstream', response };
    try {
      // A 2025-11-25 -32042 becomes a url-mode round, as in the bridge.
      if (isErrorResponse(response) && response.error.code === -32042) {
        const { request, ex } = this;
        result = urlElicitationRound({ request, principal: ex.principal }, this.lane.deps.bridge, result);
      }
    } catch (err) {
      return this.failed(err);
    }
    this.answer(result);
  }

  /**
   * Nothing was done upstream when the session was lost, its URL could not be reached, the
   * upstream wants the user's own token (the pipeline asks the user to sign in), or it refuses
   * the era (upgraded in place: the pipeline finds its era again): the pipeline serves the request.
   */
  protected onFailure(err: unknown): void {
    if (this.over) return;
    if (err instanceof SessionExpiredError) return this.lost(err);
    if (err instanceof CausewayError && err.reason === 'upstream_authorization_required') return this.handBack();
    if (this.lane.deps.modern !== undefined && isEraRefusal(err)) return this.handBack();
    this.fail(toUpstreamError(err));
  }

  /** The stream ended or dropped before the answer: followed after its event id, else the call failed. */
  protected onStreamEnd(dropped: unknown): void {
    const { lastEventId } = this;
    if (lastEventId === undefined || lastEventId === '') {
      return this.fail(dropped ?? badResponse('SSE stream ended without a response'));
    }
    const wait = Math.min(this.retryMs ?? UPSTREAM_CLIENT_DEFAULTS.defaultRetryMs, UPSTREAM_CLIENT_DEFAULTS.maxRetryMs);
    const follow = (this.resumed = new AbortController());
    setTimeout(() => {
      if (follow.signal.aborted) return;
      const { client, deps } = this.lane;
      const timeout = this.held ? heldCallTimeoutMs(deps.bridge) : undefined;
      client.resumeCall(this.session, this.id, lastEventId, this, follow.signal, timeout).then(
        (response) => this.onAnswer(response),
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
    this.lane.deadlines.remove(this);
    clearTimeout(this.timer);
    if (this.ex.goneTo === this) this.ex.goneTo = undefined;
    const seconds = ran ? (performance.now() - this.started) / 1000 : undefined;
    this.lane.client.settled(this, this.request.method, result, seconds);
  }

  /**
   * Past the call's deadline (expire, below): working past the upstream's timeout, as the bridge's
   * round sees it, is cancelled; a held call's own deadline only lets it go, as the session
   * client's deadline lets a call go.
   */
  deadline(): void {
    this.stop(causewayError('upstream_timeout'), this.held === undefined);
  }

  /**
   * The client went before the answer: the call is cancelled upstream. (Once held, the bridge hears it on the signal.)
   */
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

  /** The call held by the multi-round bridge, from its first ask. */
  private adopt(): { pending: PendingCall; observer: CallObserver } {
    const { deps } = this.lane;
    const ex = this.roundView();
    const held = adopt(ex, this.session, deps.bridge, {
      id: this.id,
      stop: {
        cancel: () => this.stop(causewayError('upstream_timeout', 'The call was cancelled'), true),
        detach: () => this.stop(causewayError('upstream_timeout', 'The call was let go'), false),
      },
      events: this.seen,
    });
    this.held = held;
    // From here the bridge's rounds rule: the call lives as long as a held call may.
    this.lane.deadlines.remove(this);
    this.timer = setTimeout(expire, heldCallTimeoutMs(deps.bridge), this);
    if (this.ex.goneTo === this) this.ex.goneTo = undefined;
    nextRound(held.pending, deps.bridge, listenerFor(ex), ex.signal)
      .then((r) => urlElicitationRound(ex, deps.bridge, r))
      .then(
        (r) => this.answer(r),
        (err: unknown) => this.failed(err),
      )
      .then(() => this.letGo());
    return held;
  }
}

/** A call's deadline, as a timer calls it (no closure per call). */
function expire(call: { deadline(): void }): void {
  call.deadline();
}
