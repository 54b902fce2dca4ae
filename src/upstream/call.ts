// One modern request relayed as one legacy call on a pooled session: fresh upstream id and
// progress token, 2026-only fields stripped, this call's notifications handed back with the
// client's token, and on abort a notifications/cancelled so the upstream stops the work.

import { isObject, type JsonObject, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse, type RequestId } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import type { IdMinter } from './ids.js';
import type { SessionRef, UpstreamClient } from './legacy-client.js';

export interface CallObserver {
  /** notifications/progress of this call, token already mapped back to the client's. */
  onProgress?(n: JsonRpcNotification): void;
  /** notifications/message received on this call's stream. */
  onLog?(n: JsonRpcNotification): void;
  /** Any other notification on this call's stream (list_changed and the like). */
  onOtherNotification?(n: JsonRpcNotification): void;
  /** A server->client request other than ping on this call's stream. */
  onServerRequest?(r: JsonRpcRequest): void;
}

export interface LegacyCall {
  method: string;
  /** Params as the client sent them; the modern-only parts are removed here. */
  params: JsonObject;
  progressToken: string | number | undefined;
  /** Headers for balancers between Causeway and the upstream. */
  headers?: Record<string, string>;
  /** Deadline for the whole call when it may wait on a person; the upstream timeout otherwise. */
  timeoutMs?: number;
}

const MODERN_ONLY_PARAMS = ['inputResponses', 'requestState'];
const MODERN_META_PREFIX = 'io.modelcontextprotocol/';

export function legacyParams(params: JsonObject, upstreamToken: string | undefined): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(params)) {
    if (!MODERN_ONLY_PARAMS.includes(k) && k !== '_meta') out[k] = v;
  }
  const meta: JsonObject = {};
  if (isObject(params._meta)) {
    for (const [k, v] of Object.entries(params._meta)) {
      if (!k.startsWith(MODERN_META_PREFIX) && k !== 'progressToken') meta[k] = v;
    }
  }
  if (upstreamToken !== undefined) meta.progressToken = upstreamToken;
  if (Object.keys(meta).length > 0) out._meta = meta;
  return out;
}

export async function relayCall(
  client: UpstreamClient,
  session: SessionRef,
  ids: IdMinter,
  call: LegacyCall,
  observer: CallObserver,
  log: Logger,
  signal?: AbortSignal,
): Promise<JsonRpcResponse> {
  const upstreamId = ids.requestId();
  const upstreamToken = call.progressToken === undefined ? undefined : ids.progressToken();
  const request: JsonRpcRequest = {
    jsonrpc: '2.0',
    id: upstreamId,
    method: call.method,
    params: legacyParams(call.params, upstreamToken),
  };
  const handlers = {
    onNotification(n: JsonRpcNotification) {
      if (n.method === 'notifications/progress') {
        if (upstreamToken !== undefined && isObject(n.params) && n.params.progressToken === upstreamToken) {
          observer.onProgress?.({ ...n, params: { ...n.params, progressToken: call.progressToken as RequestId } });
        }
      } else if (n.method === 'notifications/message') observer.onLog?.(n);
      else observer.onOtherNotification?.(n);
    },
    onServerRequest(r: JsonRpcRequest) {
      observer.onServerRequest?.(r);
    },
  };
  try {
    return await client.request(session, request, handlers, signal, call.headers, call.timeoutMs);
  } catch (err) {
    if (signal?.aborted) {
      const cancel: JsonRpcNotification = {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: upstreamId, reason: 'client disconnected' },
      };
      client.notify(session, cancel).catch((e: unknown) => log.debug({ err: e }, 'cancel notification failed'));
    }
    throw err;
  }
}
