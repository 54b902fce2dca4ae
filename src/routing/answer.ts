// What a modern request is answered with once its legacy call is over: the result translated (or
// the upstream's error, with its HTTP status), or the failure that ended it, answered and logged.
// The pipeline and the warm lane both end a call here.

import { serverInfoOf, statusForUpstreamError, translateError, translateResult } from '../dialect/index.js';
import { SseStream, sendCausewayError } from '../egress/index.js';
import { CausewayError, toCausewayError } from '../errors.js';
import { isErrorResponse, type JsonObject, type JsonRpcResponse } from '../jsonrpc.js';
import type { AnswerOutcome } from '../metrics/index.js';
import type { PooledSession } from '../pool/index.js';
import { markFailed } from '../tracing/index.js';
import type { ModernDeps, ModernExchange } from './exchange.js';

/** Told a cacheable request's complete result, and the session it was read on, for the gateway cache. */
export type Keep = (session: PooledSession, result: JsonObject) => void;

/**
 * What a client gets for a legacy response to its request: the result translated (or the error), and the HTTP status.
 */
export function modernAnswer(
  ex: Pick<ModernExchange, 'request' | 'access' | 'span' | 'notes'>,
  deps: ModernDeps,
  session: PooledSession,
  upstream: JsonRpcResponse,
  keep?: Keep,
): { status: number; body: JsonObject } {
  const { request } = ex;
  if (isErrorResponse(upstream)) {
    const error = translateError(request.method, upstream.error, request.params);
    markFailed(ex.span, 'upstream_error', error.code);
    if (ex.notes) ex.notes.code = error.code;
    return {
      status: statusForUpstreamError(error.code),
      body: { jsonrpc: '2.0', id: request.id, error: error as unknown as JsonObject },
    };
  }
  const cache = request.spec.cacheable ? deps.cacheHint(request.method) : undefined;
  const result = translateResult(request.method, upstream.result, {
    serverInfo: serverInfoOf(session.record.initializeResult),
    cache,
  });
  keep?.(session, result);
  return {
    status: 200,
    body: { jsonrpc: '2.0', id: request.id, result: ex.access ? ex.access.filterList(request.method, result) : result },
  };
}

/**
 * The error a request failed with, answered (as an SSE event once its stream began) and logged; 'cancelled',
 * unanswered, when the client is `gone`.
 */
export function answerFailure(
  ex: Pick<ModernExchange, 'request' | 'res' | 'span' | 'notes' | 'log'>,
  gone: boolean,
  err: unknown,
): AnswerOutcome {
  if (gone) {
    markFailed(ex.span, 'cancelled');
    return 'cancelled';
  }
  const e = toCausewayError(err);
  markFailed(ex.span, e.reason, e.code);
  if (ex.notes) ex.notes.code = e.code;
  if (!(err instanceof CausewayError)) ex.log.error({ err }, 'request failed');
  else if (e.status >= 500) ex.log.warn({ reason: e.reason, message: e.message, err: e.cause }, 'request failed');
  if (ex.res.headersSent) {
    const s = new SseStream(ex.res);
    s.end({ jsonrpc: '2.0', id: ex.request.id, error: { code: e.code, message: e.message } });
    return e.reason;
  }
  sendCausewayError(ex.res, e, ex.request.id);
  return e.reason;
}
