// One request sent upstream as its client span (tracing on): the span's trace context goes in
// params._meta (the MCP convention's place, so stdio and HTTP+SSE upstreams get it too), and the
// HTTP hop puts it in the traceparent header. Tracing off, the request goes as it is.

import {
  isErrorResponse,
  isObject,
  type JsonObject,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../../jsonrpc.js';
import { callName } from '../../envelope/index.js';
import { inUpstreamSpan } from '../../tracing/index.js';
import type { SessionRef } from './headers.js';
import type { StreamHandlers, UpstreamSessionClient } from './session-client.js';

export function tracedRequest(
  client: UpstreamSessionClient,
  session: SessionRef,
  request: JsonRpcRequest,
  handlers: StreamHandlers,
  signal?: AbortSignal,
  headers?: Record<string, string>,
  timeoutMs?: number,
): Promise<JsonRpcResponse> {
  return inUpstreamSpan(
    request.method,
    () => ({
      method: request.method,
      name: callName(request.method, request.params),
      id: request.id,
      protocolVersion: session.protocolVersion,
    }),
    (trace) =>
      client.request(session, trace ? withTraceMeta(request, trace) : request, handlers, signal, headers, timeoutMs),
    (response) => (isErrorResponse(response) ? response.error.code : undefined),
  );
}

/** Replaces any traceparent / tracestate the client put in _meta: the upstream's parent is Causeway's span. */
function withTraceMeta(request: JsonRpcRequest, trace: Record<string, string>): JsonRpcRequest {
  const params = isObject(request.params) ? request.params : {};
  const meta: JsonObject = {};
  if (isObject(params._meta))
    for (const [k, v] of Object.entries(params._meta)) if (k !== 'traceparent' && k !== 'tracestate') meta[k] = v;
  return { ...request, params: { ...params, _meta: { ...meta, ...trace } } };
}
