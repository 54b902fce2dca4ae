// Reads a request body within its byte and time limits, then parses it as JSON. Over the limit
// is 413, too slow is 408; a body that is not JSON, or is nested too deep or holds too many items,
// is reported, not thrown, so the front door decides (a legacy session may still want bad JSON
// forwarded; JSON over the limits is refused on either path).

import { causewayError } from '../errors.js';
import { isObject, isRequestId, type RequestId } from '../jsonrpc.js';
import { exceededLimit, type JsonLimitExceeded, type JsonLimits } from './json-limits.js';
import type { IngressRequest } from './server.js';

export interface BodyLimits {
  maxBytes: number;
  timeoutMs: number;
}

/** Where a body read ends: `read` with the whole body, or `failed` (413, 408, the client gone). */
export interface BodyReader {
  read(body: Buffer): void;
  failed(err: Error): void;
}

/** Reads the body, then tells `to` once. No promise: the front door's walk goes on from `read`. */
export function readBody(req: IngressRequest, limits: BodyLimits, to: BodyReader): void {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.maxBytes) {
    req.resume();
    to.failed(causewayError('body_too_large'));
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let done = false;
  const finish = (err?: Error) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    req.off('aborted', onAborted);
    if (err) {
      // Keep draining quietly so the connection can still carry the error reply.
      req.resume();
      to.failed(err);
    } else to.read(Buffer.concat(chunks, size));
  };
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size > limits.maxBytes) finish(causewayError('body_too_large'));
    else chunks.push(chunk);
  };
  const onEnd = () => finish();
  const onError = (err: Error) => finish(err);
  const onAborted = () => finish(new Error('client aborted the request'));
  const timer = setTimeout(() => finish(causewayError('request_timeout')), limits.timeoutMs);
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('aborted', onAborted);
}

export type ParsedBody =
  | { ok: true; value: unknown }
  | { ok: false }
  /** Too deep or too wide to accept; `json` whether it parsed at all, `id` the request's when it could be read. */
  | { ok: false; exceeded: JsonLimitExceeded; json: boolean; id: RequestId | null };

/** Measured first, then parsed: JSON.parse is iterative, so even a refused body yields its id. */
export function parseJson(body: Buffer, limits: JsonLimits): ParsedBody {
  const text = body.toString('utf8');
  const exceeded = exceededLimit(text, limits);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return exceeded ? { ok: false, exceeded, json: false, id: null } : { ok: false };
  }
  if (exceeded === undefined) return { ok: true, value };
  const id = isObject(value) && isRequestId(value.id) ? value.id : null;
  return { ok: false, exceeded, json: true, id };
}
