// What the upstream sends on a call's stream, routed: the response awaited by the call is returned,
// notifications and server->client requests go to the caller's handlers, pings are answered at once
// [L-PING], and a request nobody handles is refused with -32601 so the upstream never waits on it.
// consume() reads one SSE connection and reports a clean end or a drop, so the caller can resume.

import type { JsonRpcRequest, JsonRpcResponse, RequestId } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { abandon, finish, tooLarge, type ResponseBody } from './body.js';
import type { CallScope } from './call-scope.js';
import { isConnectionDrop, type AskingCall, type SessionRef } from '../core/index.js';
import { badResponse, decodeMessages, type UpstreamMessage } from './messages.js';
import { SseParser, type SseEvent } from './sse.js';

export type { StreamHandlers } from '../core/index.js';

/** Where an SSE stream is, for a resume with Last-Event-ID after `retry:` ms. */
export interface Cursor {
  lastEventId: string | undefined;
  retryMs: number | undefined;
}

export interface Exchange extends AskingCall {
  /** The id of the awaited response; undefined on the standalone GET stream. */
  id: RequestId | undefined;
  scope: CallScope;
  /** Standalone streams skip bad events instead of failing a call. */
  lenient: boolean;
  /** A call that may sit silent for long (held for a multi-round answer): no idle body timeout. */
  patient?: boolean;
}

export interface Inbound {
  log: Logger;
  /** POSTs an answer to a server->client request; never throws. */
  reply(session: SessionRef, r: JsonRpcResponse, method: string): void;
  /** A request from the session's standalone GET stream, answered by no call of its own: given to a call in flight, or refused. */
  outside?(session: SessionRef, r: JsonRpcRequest): void;
}

export interface ReadLimits {
  maxEventBytes: number;
  /** Cap on one HTTP response body; undefined for long-lived streams. */
  maxBodyBytes: number | undefined;
}

export type Outcome =
  | { response: JsonRpcResponse }
  | { ended: true; events: number }
  | { dropped: unknown; events: number };

export async function consume(
  io: Inbound,
  ctx: Exchange,
  body: ResponseBody,
  cursor: Cursor,
  limits: ReadLimits,
): Promise<Outcome> {
  // One loop over the body's chunks, the byte cap and the SSE parser inline (no generator per
  // layer). Leaving it at the response must not destroy the body (an AbortError, and its stack,
  // per call): the rest, normally just its end, is drained by finish().
  const parser = new SseParser({ maxEventBytes: limits.maxEventBytes });
  const max = limits.maxBodyBytes;
  let total = 0;
  let events = 0;
  try {
    for await (const chunk of body.iterator({ destroyOnReturn: false })) {
      total += chunk.byteLength;
      if (max !== undefined && total > max) throw tooLarge(max);
      for (const ev of parser.push(chunk)) {
        events += 1;
        const answer = onEvent(io, ctx, cursor, ev);
        if (answer !== undefined) {
          finish(body);
          return { response: answer };
        }
      }
    }
    for (const ev of parser.end()) {
      events += 1;
      const answer = onEvent(io, ctx, cursor, ev);
      if (answer !== undefined) return { response: answer };
    }
    return { ended: true, events };
  } catch (err) {
    abandon(body);
    if (ctx.scope.aborted) throw err;
    if (ctx.lenient || isConnectionDrop(err)) return { dropped: err, events };
    throw err;
  }
}

/** One SSE event: its cursor kept, its messages routed; the awaited response when it carries it. */
function onEvent(io: Inbound, ctx: Exchange, cursor: Cursor, ev: SseEvent): JsonRpcResponse | undefined {
  if (ev.id !== undefined) cursor.lastEventId = ev.id;
  if (ev.retry !== undefined) cursor.retryMs = ev.retry;
  ctx.handlers.beforeEvent?.(ev.id);
  if (ev.data === '' || (ev.event !== undefined && ev.event !== 'message')) return undefined;
  let messages: UpstreamMessage[];
  try {
    messages = decodeMessages(ev.data);
  } catch (err) {
    if (!ctx.lenient) throw err;
    io.log.warn({ err }, 'skipping an invalid event on the upstream GET stream');
    return undefined;
  }
  const answer = route(io, ctx, messages);
  if (ev.id !== undefined && ev.id !== '') deliver(io, () => ctx.handlers.afterEvent?.(ev.id!), 'event id');
  return answer;
}

/** An id-less error answers the call it arrived on; an id-less result is garbage. */
export function route(io: Inbound, ctx: Exchange, messages: UpstreamMessage[]): JsonRpcResponse | undefined {
  let answer: JsonRpcResponse | undefined;
  for (const m of messages) {
    if (m.kind === 'notification') {
      deliver(io, () => ctx.handlers.onNotification?.(m.message), m.message.method);
    } else if (m.kind === 'request') {
      serverRequest(io, ctx, m.message);
    } else if (ctx.id !== undefined && m.message.id === ctx.id) {
      answer = m.message;
    } else if (m.message.id === undefined || m.message.id === null) {
      if (!('error' in m.message)) {
        if (ctx.lenient) continue;
        throw badResponse('response without id');
      }
      if (ctx.id !== undefined) answer = { jsonrpc: '2.0', id: ctx.id, error: m.message.error };
    } else {
      io.log.debug('dropping an upstream response for another request');
    }
  }
  return answer;
}

/** The legacy code for "no such method": an ask nobody can answer is refused with it. */
const METHOD_NOT_FOUND = -32601;

/** Why an ask from the GET stream is refused. */
export const NO_CALL = 'No call in flight can take this request';

/** The answer that refuses an upstream's server->client request. */
export function refusal(id: RequestId, message: string): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: { code: METHOD_NOT_FOUND, message } };
}

function serverRequest(io: Inbound, ctx: Exchange, r: JsonRpcRequest): void {
  if (r.method === 'ping') {
    io.reply(ctx.session, { jsonrpc: '2.0', id: r.id, result: {} }, r.method);
    return;
  }
  ctx.asked = true;
  const onServerRequest = ctx.handlers.onServerRequest;
  if (onServerRequest === undefined) {
    if (ctx.id === undefined && io.outside) io.outside(ctx.session, r);
    else io.reply(ctx.session, refusal(r.id, ctx.id === undefined ? NO_CALL : 'Method not found'), r.method);
    return;
  }
  deliver(io, () => onServerRequest(r), r.method);
}

function deliver(io: Inbound, fn: () => void, method: string): void {
  try {
    fn();
  } catch (err) {
    io.log.error({ err, method }, 'upstream message handler threw');
  }
}
