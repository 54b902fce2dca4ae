// What the rest of Causeway needs of an upstream client, whatever carries the legacy session:
// Streamable HTTP (http/legacy-client.ts, one HTTP exchange per request), one channel per session
// (channel/channel-client.ts: a stdio child process or a 2024-11-05 HTTP+SSE connection), or
// whichever of the HTTP two an upstream turns out to speak (channel/auto-client.ts). The pool opens
// and ends sessions with it, the pipeline and the multi-round bridge relay calls, subscriptions
// listen.

import type { JsonObject, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId } from '../../jsonrpc.js';
import type { SessionRef } from './headers.js';

export interface HandshakeResult extends SessionRef {
  initializeResult: JsonObject;
}

export interface InitializeParams {
  protocolVersion: string;
  capabilities: JsonObject;
  clientInfo: JsonObject;
}

/** Where what the upstream sends besides the awaited answer goes: notifications and its own requests. */
export interface StreamHandlers {
  onNotification?(n: JsonRpcNotification): void;
  onServerRequest?(r: JsonRpcRequest): void;
  /** Each SSE event's id (undefined: the event had none), before its messages are routed. */
  beforeEvent?(id: string | undefined): void;
  /** An event with an id was read and its messages handed on (a cursor the caller may keep to resume elsewhere). */
  afterEvent?(id: string): void;
}

/** A call in flight that an ask from its session's GET stream may be handed to (asking-calls.ts). */
export interface AskingCall {
  session: SessionRef;
  handlers: StreamHandlers;
  /** Set once the upstream asked the client something on this call: its latency is then the client's too. */
  asked?: boolean;
}

export interface UpstreamSessionClient {
  /** False while the place a session lives on is ejected, or is not one of this upstream's. */
  admits(target: string | undefined): boolean;
  /** True when a session at `target` ends with this process (a child process of this replica). */
  endsHere?(target: string | undefined): boolean;
  /**
   * True when the upstream sends what belongs to no call (list changes, asks) on a session's
   * standalone GET stream, which somebody must hold for it to arrive (Streamable HTTP).
   */
  hasStandaloneStream?(): boolean;
  /** The position of a session's place in the upstream's list, for logs. */
  targetIndex(target: string | undefined): number;
  /** Opens one upstream session for `principal` (a principal hash): initialize, then notifications/initialized. */
  initialize(params: InitializeParams, signal?: AbortSignal, principal?: string): Promise<HandshakeResult>;
  /**
   * Sends a request on a session and resolves with its response; notifications and server->client
   * requests that belong to it go to `handlers`. Fails with an upstream_* CausewayError,
   * SessionExpiredError (the session is gone: open another) or the caller's abort reason.
   */
  request(
    session: SessionRef,
    msg: JsonRpcRequest,
    handlers: StreamHandlers,
    signal?: AbortSignal,
    extraHeaders?: Record<string, string>,
    timeoutMs?: number,
  ): Promise<JsonRpcResponse>;
  /** Follows a call sent earlier to its response; ResumeRefusedError when it cannot be taken up. */
  resumeCall(
    session: SessionRef,
    id: RequestId,
    lastEventId: string,
    handlers: StreamHandlers,
    signal: AbortSignal,
    timeoutMs?: number,
  ): Promise<JsonRpcResponse>;
  notify(session: SessionRef, n: JsonRpcNotification): Promise<void>;
  respond(session: SessionRef, r: JsonRpcResponse): Promise<void>;
  /** The session's messages that belong to no call (list_changed, resources/updated), until `signal` aborts. */
  openStream(
    session: SessionRef,
    handlers: StreamHandlers,
    signal: AbortSignal,
    lastEventId?: string,
  ): Promise<'unsupported' | { done: Promise<void> }>;
  terminate(session: SessionRef): Promise<void>;
  /** Refuses new work, lets in-flight calls finish, then lets go of every connection or process. */
  close(): Promise<void>;
  /** Aborts every call now. */
  destroy(): Promise<void>;
}
