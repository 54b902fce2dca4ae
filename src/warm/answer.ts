// The client's side of a warm call (call.ts): the request as the front door holds it, the view of
// it the multi-round bridge's rounds take, and the answer written to it, translated, with its
// metric.

import { sendJson } from '../egress/index.js';
import type { ModernRequest } from '../envelope/index.js';
import { isErrorResponse } from '../jsonrpc.js';
import type { AnswerOutcome, ResultType } from '../metrics/index.js';
import type { RoundExchange, RoundResult } from '../mrtr/index.js';
import type { PooledSession } from '../pool/index.js';
import { answerFailure, modernAnswer, type AccessNotes, type Answered } from '../routing/index.js';
import { AnswerReader } from '../upstream/index.js';
import type { WarmExchange, WarmUpstream } from './exchange.js';

export abstract class WarmAnswer<X extends WarmExchange> extends AnswerReader {
  readonly span = undefined;
  protected readonly started = performance.now();

  constructor(
    protected readonly lane: WarmUpstream,
    /** The request as the front door holds it: a held call lets it go once the client has its first round (call.ts). */
    protected ex: X,
    readonly request: ModernRequest,
    protected readonly pooled: PooledSession,
  ) {
    super();
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

  /** The request as a round of the multi-round bridge sees it, once the call is held. */
  protected roundView(): RoundExchange {
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

  /**
   * A held call's client has its first answer: the front door's request (its Visit, with the
   * request and response it read and wrote) is let go, which would otherwise live as long as the
   * call is held. From here the call reads only its log (reply) and clears nothing on it (end).
   */
  protected letGo(): void {
    const answered: Partial<WarmExchange> = { log: this.ex.log, goneTo: undefined };
    this.ex = answered as X;
  }

  protected answer(r: RoundResult): void {
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
    if (answered === 'upstream_error') this.measured('error', 'upstream_error');
    else this.measured(answered, 'ok');
  }

  protected failed(err: unknown): void {
    this.measured('error', answerFailure(this, this.ex.gone, err));
  }

  private measured(resultType: ResultType, outcome: AnswerOutcome): void {
    const { request } = this;
    this.notes.resultType = resultType;
    const seconds = (performance.now() - this.started) / 1000;
    this.lane.deps.metrics.answered(request.method, request.name, resultType, outcome, seconds);
  }
}
