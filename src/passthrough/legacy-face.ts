// What the front door hands a legacy client's request to (dual era): the byte passthrough to a
// Streamable HTTP upstream (legacy.ts), or the face that serves the legacy protocol itself over
// an upstream whose sessions are Causeway's own channels (stdio, HTTP+SSE: channel-face.ts).

import type { IncomingHttpHeaders } from 'node:http';
import { sendCausewayError, type HttpResponse, type SseStream } from '../egress/index.js';
import { causewayError, toCausewayError } from '../errors.js';
import { isNotification, isObject, isRequest, isResponse, type JsonRpcMessage, type RequestId } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import type { ListLens } from '../view/index.js';

/** A legacy POST's body: its bytes (passed on as they are), and what the front door parsed of them. */
export interface LegacyBody {
  bytes: Buffer;
  /** The parsed JSON; undefined when the bytes are not JSON. */
  json: unknown;
}

/** A legacy client's request, as the front door hands it to a face. */
export interface LegacyRequest {
  method: 'POST' | 'GET' | 'DELETE';
  headers: IncomingHttpHeaders;
  /** A POST's body; undefined for GET and DELETE. */
  body?: LegacyBody;
  res: HttpResponse;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** Routing headers (Mcp-Method, Mcp-Name) the byte passthrough adds upstream. */
  extraHeaders?: Record<string, string>;
  /** What lists show: the verified token's scopes (auth.rules), the mount's view, or both. */
  access?: ListLens;
  /** Who asks: the principal hash the front door worked out (auth/principal.ts); it owns the session. */
  principal: string;
}

export interface LegacyFace {
  /** A legacy POST (with its body), GET stream or DELETE; answers on `req.res`, never throws. */
  forward(req: LegacyRequest): Promise<void>;
  /** Ends the long-lived GET streams it serves itself (a drain's stream phase); the sessions stay. */
  endStreams?(): void;
  /** Lets go of connections or sessions once the requests in flight are done. */
  close(): Promise<void>;
}

/** 404 to a request on a session: a legacy client then starts a new one [L-TR]. */
export function sessionGone(res: HttpResponse, id: RequestId | null): void {
  sendCausewayError(res, causewayError('not_found', 'Session not found'), id);
}

/**
 * Answers a legacy request with `err`, what kept its upstream from being worked out (its transport, its era), and
 * says `why` at warn; answers nothing when the client is gone already.
 */
export function refuseUnresolved(req: LegacyRequest, err: unknown, log: Logger, why: string): void {
  if (req.signal.aborted) return;
  log.warn({ err: (err as Error).message }, why);
  sendCausewayError(req.res, toCausewayError(err), null);
}

/** The one JSON-RPC message of a POST body to a face Causeway serves itself, or the error that refuses it. */
export function readLegacyMessage(body: LegacyBody | undefined): JsonRpcMessage {
  const value = body?.json;
  if (value === undefined) throw causewayError('parse_error');
  if (Array.isArray(value))
    throw causewayError(
      'batch_not_supported',
      'JSON-RPC batches are not supported on this mount: send one message per POST',
    );
  if (!isObject(value) || value.jsonrpc !== '2.0')
    throw causewayError('invalid_request', 'Expected one JSON-RPC 2.0 message');
  if (isRequest(value) || isNotification(value) || isResponse(value)) return value;
  throw causewayError('invalid_request', 'Expected a JSON-RPC request, notification or response');
}

/**
 * What a legacy client's initialize says of itself, from its params: its protocolVersion, capabilities (none when
 * left out) and clientInfo; invalid_params when one is missing or of the wrong type.
 */
export function readInitializeParams(params: unknown) {
  const p = isObject(params) ? params : {};
  const { protocolVersion, capabilities = {}, clientInfo } = p;
  if (typeof protocolVersion !== 'string' || !isObject(capabilities) || !isObject(clientInfo)) {
    throw causewayError(
      'invalid_params',
      'initialize needs params.protocolVersion, params.capabilities and params.clientInfo',
    );
  }
  return { protocolVersion, capabilities, clientInfo };
}

/** Whether a legacy request takes an SSE answer: its Accept lists text/event-stream (or anything). */
export function acceptsSse(headers: IncomingHttpHeaders): boolean {
  const accept = headers.accept;
  return /\btext\/event-stream\b|\*\/\*/i.test(typeof accept === 'string' ? accept : '');
}

/** `:` comments on `stream` every `everyMs` (none for 0) until the returned function stops them. */
export function keepAlive(stream: SseStream, everyMs: number): () => void {
  if (everyMs <= 0) return () => {};
  const timer = setInterval(() => stream.comment(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
