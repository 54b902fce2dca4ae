// One POST on a legacy session and its answer [L-TR]: a request is answered as JSON or as an SSE
// stream, read as it comes by an AnswerReader (reader.ts) and, should the stream end before the
// response, followed with GET + Last-Event-ID (streams.ts); a notification or response 202 (200
// and 204 are tolerated). A 400 or 404 on a session that says the session is gone
// (core/lost-session.ts) is SessionExpiredError; a 4xx with a JSON-RPC error body is the
// upstream's in-band answer; anything else is a refusal. An initialize that a URL cannot take
// now (502, 503, 504: overloaded, starting, behind a dead gateway) opened no session there: a
// TargetUnreachableError, so the handshake tries another URL.

import type { IncomingHttpHeaders } from 'node:http';
import type { JsonRpcNotification, JsonRpcResponse } from '../../jsonrpc.js';
import { discard, readRefusal } from './body.js';
import type { CallScope } from './call-scope.js';
import {
  isValidSessionId,
  losesSession,
  REFUSAL_BODY_LIMIT,
  SessionExpiredError,
  TargetUnreachableError,
  type SessionRef,
} from '../core/index.js';
import type { Controller } from './compose/index.js';
import { errorBodyOf, httpRefusal, LONG_LIVED, MOVABLE, sentTo } from './dispatcher.js';
import { badResponse, type Exchange } from './inbound.js';
import { AnswerReader } from './reader.js';
import { follow, type StreamContext } from './streams.js';

/** The rest of a stream whose response was read is drained for this long at most, then cut. */
const DRAIN_MS = 1000;

/** POSTs a request (`initialize` sets ctx.session.sessionId from Mcp-Session-Id) and reads its response. */
export function exchange(
  c: StreamContext,
  ctx: Exchange,
  kind: 'initialize' | 'post',
  body: string,
  extraHeaders?: Record<string, string>,
): Promise<JsonRpcResponse> {
  const { dispatcher } = c;
  const initialize = kind === 'initialize';
  const headers = initialize
    ? dispatcher.headers('initialize', undefined)
    : dispatcher.headers('post', ctx.session, extraHeaders);
  return new Promise((resolve, reject) => {
    const post = new Post(c, ctx, initialize, resolve, reject);
    try {
      dispatcher.post(ctx.session, headers, body, post, ctx.patient === true ? LONG_LIVED | MOVABLE : MOVABLE);
    } catch (err) {
      post.stop(err);
    }
  });
}

/** The POST's handler: its answer read, and the promise exchange() returns settled once. */
class Post extends AnswerReader {
  protected readonly io;
  protected readonly limits;
  private readonly abort = (): void => this.stop(this.ctx.scope.signal.reason);

  constructor(
    private readonly c: StreamContext,
    protected readonly ctx: Exchange,
    private readonly initialize: boolean,
    private readonly resolve: (response: JsonRpcResponse) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    super();
    this.io = c.io;
    this.limits = c;
    const { signal } = ctx.scope;
    if (signal.aborted) this.abort();
    else signal.addEventListener('abort', this.abort, { once: true });
  }

  override onRequestStart(controller: Controller, context?: unknown): void {
    super.onRequestStart(controller, context);
    if (this.over && !this.closed) controller.abort(this.ctx.scope.signal.reason as Error);
  }

  override onResponseStart(controller: Controller, status: number, headers: IncomingHttpHeaders): void {
    if (this.initialize && !this.over) {
      const { c, ctx } = this;
      if (status === 502 || status === 503 || status === 504) {
        if (ctx.session.target !== undefined) c.targets.failed(ctx.session.target);
        const refusal = httpRefusal(status, undefined, undefined, this.refusedBy().to);
        return this.stop(new TargetUnreachableError(c.upstream, refusal));
      }
      const header = headers['mcp-session-id'];
      const sessionId = Array.isArray(header) ? header[0] : header;
      if (sessionId !== undefined && !isValidSessionId(sessionId)) {
        return this.stop(badResponse('malformed Mcp-Session-Id'));
      }
      ctx.session = { ...ctx.session, sessionId };
    }
    super.onResponseStart(controller, status, headers);
  }

  /** Fails the call; the request is cut unless undici is done with it. */
  stop(err: unknown): void {
    if (this.over) return;
    this.end();
    if (!this.closed) this.controller?.abort(err as Error);
    this.reject(err);
  }

  protected refusedBy() {
    return { upstream: this.c.upstream, to: this.c.dispatcher.to('POST', this.ctx.session) };
  }

  protected onAnswer(response: JsonRpcResponse): void {
    if (this.over) return;
    this.end();
    this.resolve(response);
    if (!this.closed) setTimeout(cut, DRAIN_MS, this).unref();
  }

  protected onFailure(err: unknown): void {
    this.stop(err);
  }

  protected onStreamEnd(dropped: unknown): void {
    if (this.over) return;
    if (this.ctx.scope.aborted) return this.stop(dropped);
    this.end();
    const { events } = this;
    const outcome = dropped === undefined ? { ended: true as const, events } : { dropped, events };
    follow(this.c, this.ctx, this, outcome).then(this.resolve, this.reject);
  }

  /** Called by the drain timer: a stream still open after its response is cut. */
  cut(): void {
    if (!this.closed) this.controller?.abort(badResponse('the stream went on after the response'));
  }

  private end(): void {
    this.over = true;
    this.ctx.scope.signal.removeEventListener('abort', this.abort);
  }
}

function cut(post: Post): void {
  post.cut();
}

/** POSTs a notification or a response. */
export async function postOneWay(
  c: StreamContext,
  scope: CallScope,
  session: SessionRef,
  message: JsonRpcNotification | JsonRpcResponse,
): Promise<void> {
  const res = await c.dispatcher.send(
    'POST',
    session,
    c.dispatcher.headers('post', session),
    JSON.stringify(message),
    scope.signal,
    MOVABLE,
  );
  const status = res.statusCode;
  if (status === 202 || status === 200 || status === 204) {
    await discard(res.body);
    return;
  }
  const text = await readRefusal(res.body, REFUSAL_BODY_LIMIT);
  const lost = session.sessionId !== undefined && losesSession(status, text, undefined);
  if (lost) throw new SessionExpiredError(c.upstream);
  const rpc = errorBodyOf(text);
  throw httpRefusal(status, rpc?.error.message.slice(0, 200), rpc?.error, sentTo(res));
}
