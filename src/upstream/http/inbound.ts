// What a legacy upstream sends, decoded and routed. Decoded: one JSON-RPC message, or a 2025-03-26
// batch array, into checked messages; text that is not JSON, or a value that is not a well-formed
// JSON-RPC message, is upstream_bad_response. Routed: the response awaited by the call is returned,
// notifications and server->client requests go to the caller's handlers, pings are answered at once
// [L-PING], and a request nobody handles is refused with -32601 so the upstream never waits on it.
// Reading the answers that carry them, JSON or SSE, is reader.ts's.

import { CausewayError } from '../../errors.js';
import {
  isNotification,
  isObject,
  isRequest,
  isResponse,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import type { CallScope } from './call-scope.js';
import type { AskingCall, SessionRef } from '../core/index.js';

export type { StreamHandlers } from '../core/index.js';

/** What routing a call's messages needs of it. */
export interface Routed extends AskingCall {
  /** The id of the awaited response; undefined on the standalone GET stream. */
  readonly id: RequestId | undefined;
  /** Standalone streams skip bad events instead of failing a call. */
  readonly lenient?: boolean;
}

export interface Exchange extends Routed {
  id: RequestId | undefined;
  scope: CallScope;
  lenient: boolean;
  /** A call that may sit silent for long (held for a multi-round answer): no idle body timeout. */
  patient?: boolean;
}

export interface Inbound {
  log: Logger;
  /** POSTs an answer to a server->client request; never throws. */
  reply(session: SessionRef, r: JsonRpcResponse, method: string): void;
  /**
   * A request from the session's standalone GET stream, answered by no call of its own: given to a call in flight, or
   * refused.
   */
  outside?(session: SessionRef, r: JsonRpcRequest): void;
}

/** One event of a text/event-stream (reader.ts parses them). */
export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  retry?: number;
}

/** Where an SSE stream is, for a resume with Last-Event-ID after `retry:` ms. */
export interface Cursor {
  lastEventId: string | undefined;
  retryMs: number | undefined;
}

/** One SSE event: its cursor kept, its messages routed; the awaited response when it carries it. */
export function routeEvent(io: Inbound, ctx: Routed, cursor: Cursor, ev: SseEvent): JsonRpcResponse | undefined {
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
  const after = ctx.handlers.afterEvent;
  const id = ev.id;
  if (after !== undefined && id !== undefined && id !== '') deliver(io, () => after.call(ctx.handlers, id), 'event id');
  return answer;
}

/** An id-less error answers the call it arrived on; an id-less result is garbage. */
export function route(io: Inbound, ctx: Routed, messages: UpstreamMessage[]): JsonRpcResponse | undefined {
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

function serverRequest(io: Inbound, ctx: Routed, r: JsonRpcRequest): void {
  if (r.method === 'ping') {
    io.reply(ctx.session, { jsonrpc: '2.0', id: r.id, result: {} }, r.method);
    return;
  }
  ctx.asked = true;
  const { handlers } = ctx;
  if (handlers.onServerRequest === undefined) {
    if (ctx.id === undefined && io.outside) io.outside(ctx.session, r);
    else io.reply(ctx.session, refusal(r.id, ctx.id === undefined ? NO_CALL : 'Method not found'), r.method);
    return;
  }
  deliver(io, () => handlers.onServerRequest!(r), r.method);
}

function deliver(io: Inbound, fn: () => void, method: string): void {
  try {
    fn();
  } catch (err) {
    io.log.error({ err, method }, 'upstream message handler threw');
  }
}

export type UpstreamMessage =
  | { kind: 'response'; message: JsonRpcResponse }
  | { kind: 'request'; message: JsonRpcRequest }
  | { kind: 'notification'; message: JsonRpcNotification };

export function badResponse(detail: string, cause?: unknown): CausewayError {
  return new CausewayError(
    'upstream_bad_response',
    `Upstream sent an invalid response: ${detail}`,
    undefined,
    cause === undefined ? undefined : { cause },
  );
}

function wellFormedResponse(m: JsonRpcResponse): boolean {
  if ('error' in m) {
    const e: unknown = m.error;
    return isObject(e) && typeof e.code === 'number' && Number.isInteger(e.code) && typeof e.message === 'string';
  }
  return isObject(m.result);
}

export function classify(value: unknown): UpstreamMessage {
  if (isResponse(value)) {
    if (!wellFormedResponse(value)) throw badResponse('malformed JSON-RPC response');
    return { kind: 'response', message: value };
  }
  if (isRequest(value)) return { kind: 'request', message: value };
  if (isNotification(value)) return { kind: 'notification', message: value };
  throw badResponse('not a JSON-RPC message');
}

/** `value` classified; undefined, said at warn as `dropping`, when it is no well-formed JSON-RPC message. */
export function classifyOrDrop(value: unknown, log: Logger, dropping: string): UpstreamMessage | undefined {
  try {
    return classify(value);
  } catch (err) {
    log.warn({ err }, dropping);
    return undefined;
  }
}

export function decodeMessages(text: string): UpstreamMessage[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw badResponse('body is not JSON', err);
  }
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) throw badResponse('empty batch');
    return parsed.map(classify);
  }
  return [classify(parsed)];
}
