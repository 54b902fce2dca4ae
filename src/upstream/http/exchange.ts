// One POST on a legacy session and its answer [L-TR]: a request is answered as JSON or as an SSE
// stream (streams.ts reads that to the response), a notification or response 202 (200 and 204
// are tolerated). A 400 or 404 on a session that says the session is gone (core/lost-session.ts)
// is SessionExpiredError; a 4xx with a JSON-RPC error body is the upstream's in-band answer;
// anything else is a refusal. An initialize that a URL cannot take
// now (502, 503, 504: overloaded, starting, behind a dead gateway) opened no session there: a
// TargetUnreachableError, so the handshake tries another URL.

import type { JsonRpcErrorResponse, JsonRpcNotification, JsonRpcResponse } from '../../jsonrpc.js';
import { checkContentLength, discard, mediaType, readRefusal, readText } from './body.js';
import type { CallScope } from './call-scope.js';
import {
  isValidSessionId,
  losesSession,
  REFUSAL_BODY_LIMIT,
  SessionExpiredError,
  TargetUnreachableError,
  type SessionRef,
} from '../core/index.js';
import { errorBodyOf, httpRefusal, LONG_LIVED, MOVABLE, sentTo, type Response, type SentTo } from './dispatcher.js';
import { route, type Exchange } from './inbound.js';
import { badResponse, decodeMessages } from './messages.js';
import { readRequestStream, type StreamContext } from './streams.js';

function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** POSTs a request (`initialize` sets ctx.session.sessionId from Mcp-Session-Id) and reads its response. */
export async function exchange(
  c: StreamContext,
  ctx: Exchange,
  kind: 'initialize' | 'post',
  body: string,
  extraHeaders?: Record<string, string>,
): Promise<JsonRpcResponse> {
  const { dispatcher } = c;
  const headers = kind === 'initialize' ? dispatcher.headers('initialize', undefined) : dispatcher.headers('post', ctx.session, extraHeaders);
  const res = await dispatcher.send('POST', ctx.session, headers, body, ctx.scope.signal, ctx.patient === true ? LONG_LIVED | MOVABLE : MOVABLE);
  if (kind === 'initialize') {
    if (res.statusCode === 502 || res.statusCode === 503 || res.statusCode === 504) {
      void discard(res.body);
      if (ctx.session.target !== undefined) c.targets.failed(ctx.session.target);
      throw new TargetUnreachableError(c.upstream, httpRefusal(res.statusCode, undefined, undefined, sentTo(res)));
    }
    const sessionId = firstHeader(res.headers['mcp-session-id']);
    if (sessionId !== undefined && !isValidSessionId(sessionId)) {
      void discard(res.body);
      throw badResponse('malformed Mcp-Session-Id');
    }
    ctx.session = { ...ctx.session, sessionId };
  }
  return answer(c, ctx, res);
}

async function answer(c: StreamContext, ctx: Exchange, res: Response): Promise<JsonRpcResponse> {
  const status = res.statusCode;
  if (status >= 400) {
    const text = await readRefusal(res.body, REFUSAL_BODY_LIMIT);
    const lost = ctx.session.sessionId !== undefined && losesSession(status, text, ctx.id);
    if (lost) throw new SessionExpiredError(c.upstream);
    return httpError(ctx, status, text, sentTo(res));
  }
  if (status < 200 || status >= 300 || status === 202 || status === 204) {
    void discard(res.body);
    throw badResponse(`HTTP ${status} to a request`);
  }
  const type = mediaType(res.headers['content-type']);
  if (type === 'application/json') {
    checkContentLength(res.body, res.headers['content-length'], c.maxResponseBytes);
    const answer = route(c.io, ctx, decodeMessages(await readText(res.body, c.maxResponseBytes)));
    if (answer === undefined) throw badResponse('no response carries the request id');
    return answer;
  }
  if (type === 'text/event-stream') return readRequestStream(c, ctx, res);
  void discard(res.body);
  throw badResponse(`unexpected content-type ${JSON.stringify(type.slice(0, 80))}`);
}

/** A 4xx with a JSON-RPC error body is the upstream's in-band answer; anything else is a refusal. */
function httpError(
  ctx: Exchange,
  status: number,
  text: string | undefined,
  to: SentTo | undefined,
): JsonRpcErrorResponse {
  const rpc = errorBodyOf(text);
  // -32022 is 2026-07-28's: a legacy session's request refused with it is an upstream now modern (era.ts).
  if (status < 500 && rpc !== undefined && ctx.id !== undefined && rpc.error.code !== -32022) {
    return { jsonrpc: '2.0', id: ctx.id, error: rpc.error };
  }
  throw httpRefusal(status, rpc?.error.message.slice(0, 200), rpc?.error, to);
}

/** POSTs a notification or a response. */
export async function postOneWay(c: StreamContext, scope: CallScope, session: SessionRef, message: JsonRpcNotification | JsonRpcResponse): Promise<void> {
  const res = await c.dispatcher.send('POST', session, c.dispatcher.headers('post', session), JSON.stringify(message), scope.signal, MOVABLE);
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
