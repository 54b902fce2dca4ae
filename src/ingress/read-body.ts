// Reads a request body within its byte and time limits, then parses it as JSON. Over the limit
// is 413, too slow is 408; a body that is not JSON, or is nested too deep or holds too many items,
// is reported, not thrown, so the front door decides (a legacy session may still want bad JSON
// forwarded; JSON over the limits is refused on either path).

import type { EventEmitter } from 'node:events';
import type { Deadlines, Due } from '../deadlines.js';
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

/**
 * Reads the body, then tells `to` once. No promise: the front door's walk goes on from `read`.
 * Its deadline (limits.timeoutMs) is kept in `deadlines`, the front door's one list for them all.
 */
export function readBody(req: IngressRequest, limits: BodyLimits, to: BodyReader, deadlines: Deadlines): void {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.maxBytes) {
    req.resume();
    to.failed(causewayError('body_too_large'));
    return;
  }
  new BodyRead(req, limits.maxBytes, to, deadlines).start();
}

/** One body being read: its chunks, its listeners on the request, and its place in the deadlines. */
class BodyRead implements Due {
  dueAt: number | undefined = undefined;
  dueBefore: Due | undefined = undefined;
  dueAfter: Due | undefined = undefined;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private done = false;
  private readonly onData = (chunk: Buffer): void => {
    this.size += chunk.length;
    if (this.size > this.maxBytes) this.finish(causewayError('body_too_large'));
    else this.chunks.push(chunk);
  };
  private readonly onEnd = (): void => this.finish();
  private readonly onError = (err: Error): void => this.finish(err);
  private readonly onAborted = (): void => this.finish(new Error('client aborted the request'));

  constructor(
    private readonly req: IngressRequest,
    private readonly maxBytes: number,
    private readonly to: BodyReader,
    private readonly deadlines: Deadlines,
  ) {}

  start(): void {
    this.deadlines.add(this);
    this.listen('on');
  }

  /** Too slow: 408. */
  deadline(): void {
    this.finish(causewayError('request_timeout'));
  }

  private finish(err?: Error): void {
    if (this.done) return;
    this.done = true;
    const { req } = this;
    this.deadlines.remove(this);
    if (err) {
      this.listen('off');
      // Keep draining quietly so the connection can still carry the error reply.
      req.resume();
      this.to.failed(err);
    } else {
      // A body read whole keeps its listeners: they do nothing once done, and taking four off
      // costs more than the request they would outlive. The chunks go now, though.
      const { chunks } = this;
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.size);
      chunks.length = 0;
      // A body in one chunk (the most) is that chunk: Node's parser gave it a buffer of its own.
      this.to.read(body);
    }
  }

  /** Its listeners on the request, added or taken off. */
  private listen(how: 'on' | 'off'): void {
    const req: EventEmitter = this.req;
    req[how]('data', this.onData);
    req[how]('end', this.onEnd);
    req[how]('error', this.onError);
    req[how]('aborted', this.onAborted);
  }
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
