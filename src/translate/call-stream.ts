// What a legacy client's request is answered on through the translated face: the call's own SSE
// stream (its notifications and asks, then its response) or a JSON answer, everything first made
// what a legacy server would send (clean.ts); and the request's headers as one bag.

import type { IncomingHttpHeaders } from 'node:http';
import { errorBody, sendCausewayError, sendJson, SseStream, type HttpResponse } from '../egress/index.js';
import type { HeaderBag } from '../envelope/index.js';
import { CausewayError, toCausewayError } from '../errors.js';
import type { JsonRpcMessage, JsonRpcResponse, RequestId } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { keepAlive } from '../passthrough/index.js';
import { legacyMessage } from './clean.js';

/** The request's headers, pseudo-headers left out, repeated ones joined. */
export function bag(headers: IncomingHttpHeaders): HeaderBag {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers))
    if (v !== undefined && !k.startsWith(':')) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/**
 * A call's SSE answer: started at its first notification or ask, kept alive until the call ends.
 * `relatedTask`: the task a tasks/result waits on, named in its answer and asks (clean.ts).
 */
export class CallStream {
  private stream: SseStream | undefined;
  private stopKeepAlive = (): void => {};

  constructor(
    private readonly res: HttpResponse,
    private readonly keepAliveMs: number,
    private readonly relatedTask?: string,
  ) {}

  open(): SseStream {
    if (this.stream === undefined) {
      this.stream = new SseStream(this.res);
      this.stopKeepAlive = keepAlive(this.stream, this.keepAliveMs);
    }
    return this.stream;
  }

  /** A notification or ask on the call's stream, as a legacy server would send it (clean.ts); started by the first. */
  send(message: JsonRpcMessage): void {
    const legacy = legacyMessage(message, this.relatedTask);
    if (legacy !== undefined) this.open().send(legacy);
  }

  /** The call's response as a legacy server would send it: its stream's end, or a JSON answer if none started. */
  finish(answer: JsonRpcResponse): void {
    const legacy = legacyMessage(answer, this.relatedTask);
    if (this.stream) this.stream.end(legacy);
    else sendJson(this.res, 200, legacy);
  }

  close(): void {
    this.stopKeepAlive();
  }
}

/**
 * A legacy request that failed: its JSON-RPC error, on its stream when one started; failures of
 * Causeway's own logged.
 */
export function refuse(res: HttpResponse, err: unknown, id: RequestId | null, log: Logger): void {
  const e = toCausewayError(err);
  if (!(err instanceof CausewayError)) log.error({ err }, 'legacy request failed');
  else if (e.status >= 500) log.warn({ reason: e.reason, message: e.message, err: e.cause }, 'legacy request failed');
  if (res.headersSent) new SseStream(res).end(errorBody(id, { code: e.code, message: e.message }));
  else sendCausewayError(res, e, id);
}
