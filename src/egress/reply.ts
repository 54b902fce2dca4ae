// The only writer of plain JSON answers: results, JSON-RPC errors with the echoed id and the
// status from the error table, and bodiless statuses. Safe to call after the client went away.

import type { ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import type { CausewayError } from '../errors.js';
import type { JsonObject, JsonRpcErrorObject, RequestId } from '../jsonrpc.js';
import { requestIdOf } from './request-id.js';

export type HttpResponse = ServerResponse | Http2ServerResponse;

function writable(res: HttpResponse): boolean {
  return !res.headersSent && !res.writableEnded && !res.destroyed;
}

export function sendJson(
  res: HttpResponse,
  status: number,
  body: unknown,
  headers?: Readonly<Record<string, string>>,
): void {
  if (!writable(res)) return;
  const text = JSON.stringify(body);
  const length = String(Buffer.byteLength(text));
  const id = headers === undefined ? requestIdOf(res) : undefined;
  // With no headers of the caller's, the request id (x-request-id) goes in at once, last as the response would
  // add it: the response sends this head as it is, instead of a copy with the id.
  const all: Record<string, string> =
    id === undefined
      ? { 'content-type': 'application/json', 'content-length': length }
      : { 'content-type': 'application/json', 'content-length': length, 'x-request-id': id };
  // Member by member: V8 builds `{ ...literal, ...headers }` on a slow path, even for no headers.
  if (headers !== undefined) for (const name in headers) all[name] = headers[name]!;
  res.writeHead(status, all);
  res.end(text);
}

export function sendResult(res: HttpResponse, id: RequestId, result: JsonObject): void {
  sendJson(res, 200, { jsonrpc: '2.0', id, result });
}

/**
 * A JSON-RPC error; `id` is omitted only when it could not be read [BASE]. Not `"id": null` as in
 * JSON-RPC 2.0: the MCP schema types it `id?: RequestId`, and null is no RequestId.
 */
export function errorBody(id: RequestId | null, error: JsonRpcErrorObject): JsonObject {
  const body: JsonObject = { jsonrpc: '2.0', error: error as unknown as JsonObject };
  if (id !== null) body.id = id;
  return body;
}

export function sendRpcError(
  res: HttpResponse,
  status: number,
  id: RequestId | null,
  error: JsonRpcErrorObject,
  headers: Readonly<Record<string, string>> = {},
): void {
  sendJson(res, status, errorBody(id, error), status === 405 ? { allow: 'POST', ...headers } : { ...headers });
}

export function sendCausewayError(res: HttpResponse, err: CausewayError, id: RequestId | null): void {
  const error: JsonRpcErrorObject = { code: err.code, message: err.message };
  if (err.data !== undefined) error.data = err.data;
  sendRpcError(res, err.status, id, error, err.headers);
}

export function sendStatus(res: HttpResponse, status: number, headers: Record<string, string> = {}): void {
  if (!writable(res)) return;
  res.writeHead(status, { 'content-length': '0', ...headers });
  res.end();
}

/** A body that is not JSON (the admin port's Prometheus text and its 404). */
export function sendText(res: HttpResponse, status: number, contentType: string, text: string): void {
  if (!writable(res)) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}
