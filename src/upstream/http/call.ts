// One modern request relayed as one legacy call on a pooled session: fresh upstream id and
// progress token, 2026-only fields stripped, this call's notifications handed back with the
// client's token, and on abort a notifications/cancelled so the upstream stops the work.

import {
  copyObject,
  isObject,
  type JsonObject,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from '../../jsonrpc.js';
import { CausewayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { type IdMinter, type UpstreamSessionClient, tracedRequest } from '../core/index.js';
import type { SessionRef, StreamHandlers } from './legacy-client.js';

export interface CallObserver {
  /** notifications/progress of this call, token already mapped back to the client's. */
  onProgress?(n: JsonRpcNotification): void;
  /** notifications/message received on this call's stream. */
  onLog?(n: JsonRpcNotification): void;
  /** Any other notification on this call's stream (list_changed and the like). */
  onOtherNotification?(n: JsonRpcNotification): void;
  /** A server->client request other than ping on this call's stream. */
  onServerRequest?(r: JsonRpcRequest): void;
  /** Each SSE event's id on this call's stream (undefined: it had none), before its messages. */
  onEvent?(id: string | undefined): void;
  /** The upstream JSON-RPC id and progress token minted for the call, before it is sent. */
  onIds?(id: RequestId, progressToken: string | undefined): void;
}

/**
 * An abort reason that lets go of a call without cancelling it upstream (no
 * notifications/cancelled): the upstream goes on, and whoever resumes its stream gets the rest.
 */
export class CallDetached extends Error {
  constructor() {
    super('call detached: it goes on upstream');
    this.name = 'CallDetached';
  }
}

/** Where a call sent earlier stands on its stream, to take it up again (resumeRelayedCall). */
export interface ResumePoint {
  /** The call's upstream JSON-RPC id and progress token (as minted when it was sent). */
  id: RequestId;
  upstreamToken: string | undefined;
  /** The stream event to resume after. */
  lastEventId: string;
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

const MODERN_META_PREFIX = 'io.modelcontextprotocol/';

export function legacyParams(params: JsonObject, upstreamToken: string | undefined): JsonObject {
  const out = copyObject(params, modernParam);
  // Copied only when it holds a key the legacy call keeps (a 2026 request's is most often all 2026 keys).
  let meta: JsonObject | undefined;
  const given = params._meta;
  if (isObject(given)) {
    for (const k in given) {
      if (modernMeta(k)) continue;
      meta = copyObject(given, modernMeta);
      break;
    }
  }
  if (upstreamToken !== undefined) (meta ??= {}).progressToken = upstreamToken;
  if (meta !== undefined) out._meta = meta;
  return out;
}

/** Params only 2026-07-28 has, and `_meta` (rebuilt for the legacy call). */
function modernParam(key: string): boolean {
  return key === '_meta' || key === 'inputResponses' || key === 'requestState';
}

/** `_meta` keys of 2026-07-28, and the client's progress token (the call gets its own). */
function modernMeta(key: string): boolean {
  return key.startsWith(MODERN_META_PREFIX) || key === 'progressToken';
}

export async function relayCall(
  client: UpstreamSessionClient,
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
  observer.onIds?.(upstreamId, upstreamToken);
  try {
    return await tracedRequest(
      client,
      session,
      request,
      callHandlers(observer, upstreamToken, call.progressToken),
      signal,
      call.headers,
      call.timeoutMs,
    );
  } catch (err) {
    cancelOnAbort(client, session, upstreamId, log, signal);
    throw err;
  }
}

/**
 * A call sent earlier on `session` (maybe by another replica), followed from `at` to its response
 * with this request's progress token; on abort it is cancelled upstream like relayCall's.
 */
export async function resumeRelayedCall(
  client: UpstreamSessionClient,
  session: SessionRef,
  at: ResumePoint,
  call: Pick<LegacyCall, 'progressToken' | 'timeoutMs'>,
  observer: CallObserver,
  log: Logger,
  signal: AbortSignal,
): Promise<JsonRpcResponse> {
  try {
    return await client.resumeCall(
      session,
      at.id,
      at.lastEventId,
      callHandlers(observer, at.upstreamToken, call.progressToken),
      signal,
      call.timeoutMs,
    );
  } catch (err) {
    cancelOnAbort(client, session, at.id, log, signal);
    throw err;
  }
}

function callHandlers(
  observer: CallObserver,
  upstreamToken: string | undefined,
  clientToken: string | number | undefined,
): StreamHandlers {
  return {
    onNotification(n: JsonRpcNotification) {
      if (n.method === 'notifications/progress') {
        if (
          upstreamToken !== undefined &&
          clientToken !== undefined &&
          isObject(n.params) &&
          n.params.progressToken === upstreamToken
        ) {
          observer.onProgress?.({ ...n, params: { ...n.params, progressToken: clientToken } });
        }
      } else if (n.method === 'notifications/message') observer.onLog?.(n);
      else observer.onOtherNotification?.(n);
    },
    onServerRequest(r: JsonRpcRequest) {
      observer.onServerRequest?.(r);
    },
    beforeEvent: observer.onEvent === undefined ? undefined : (id) => observer.onEvent?.(id),
  };
}

/**
 * A call its caller aborted is cancelled upstream, unless it was only detached (CallDetached). A
 * lent signal its own scope aborted (deadline, client shut down) carries a CausewayError: not the caller's.
 */
function cancelOnAbort(
  client: UpstreamSessionClient,
  session: SessionRef,
  id: RequestId,
  log: Logger,
  signal: AbortSignal | undefined,
): void {
  if (!signal?.aborted || signal.reason instanceof CallDetached || signal.reason instanceof CausewayError) return;
  cancelUpstream(client, session, id, log);
}

/** The client gave up on call `id`: notifications/cancelled, so the upstream stops the work. Never throws. */
export function cancelUpstream(client: UpstreamSessionClient, session: SessionRef, id: RequestId, log: Logger): void {
  const cancel: JsonRpcNotification = {
    jsonrpc: '2.0',
    method: 'notifications/cancelled',
    params: { requestId: id, reason: 'client disconnected' },
  };
  client.notify(session, cancel).catch((e: unknown) => log.debug({ err: e }, 'cancel notification failed'));
}
