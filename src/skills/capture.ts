// The answer the rest of a mount gives one request, caught instead of sent, so that the skills
// front can add to it (server/discover, initialize, resources/list) before the client gets it.
// It stands in for the client's response as the passthroughs and the pipeline write it
// (writeHead, write, end, pipe); the JSON or SSE body is read back into the JSON-RPC response
// with the request's id. Only used for answers that are one bounded response, never streams.

import { Writable } from 'node:stream';
import type { HttpResponse } from '../egress/index.js';
import { isObject, type JsonObject, type JsonRpcResponse, type RequestId } from '../jsonrpc.js';
import { decodeMessages, mediaType, sseTextMessages } from '../upstream/index.js';

/** Most bytes of an answer caught; past it the answer is given up as unreadable. */
const MAX_BYTES = 16 * 1024 * 1024;

export class CapturedResponse extends Writable {
  statusCode = 200;
  private readonly head: Record<string, string> = {};
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private sent = false;

  get headersSent(): boolean {
    return this.sent;
  }

  /** For the writers: the client's response. */
  get asResponse(): HttpResponse {
    return this as unknown as HttpResponse;
  }

  /** Header name (lower case) -> value, as the answer would have been sent. */
  get headers(): Readonly<Record<string, string>> {
    return this.head;
  }

  writeHead(status: number, headers?: Record<string, string | number | string[]>): this {
    this.statusCode = status;
    for (const [k, v] of Object.entries(headers ?? {})) this.setHeader(k, v);
    this.sent = true;
    return this;
  }

  setHeader(name: string, value: string | number | readonly string[]): this {
    this.head[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
    return this;
  }

  getHeader(name: string): string | undefined {
    return this.head[name.toLowerCase()];
  }

  removeHeader(name: string): void {
    delete this.head[name.toLowerCase()];
  }

  hasHeader(name: string): boolean {
    return name.toLowerCase() in this.head;
  }

  flushHeaders(): void {
    this.sent = true;
  }

  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.bytes += b.length;
    if (this.bytes > MAX_BYTES) return done(new Error('answer too large to add skills to'));
    this.chunks.push(b);
    this.sent = true;
    done();
  }

  /** The JSON-RPC response to `id` in what was written, JSON or SSE; undefined when there is none. */
  response(id: RequestId): JsonRpcResponse | undefined {
    const text = Buffer.concat(this.chunks).toString('utf8');
    const found: unknown[] = [];
    try {
      if (mediaType(this.head['content-type']) === 'text/event-stream') {
        for (const m of sseTextMessages(text + '\n\n', MAX_BYTES)) found.push(m.message);
      } else found.push(...decodeMessages(text).map((m) => m.message));
    } catch {
      return undefined;
    }
    return found.find((m): m is JsonRpcResponse => isObject(m) && m.id === id && ('result' in m || 'error' in m));
  }

  /** The headers the client gets with a JSON body written in place of the one caught. */
  jsonHeaders(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.head))
      if (
        ![
          'content-type',
          'content-length',
          'transfer-encoding',
          'content-encoding',
          'cache-control',
          'x-accel-buffering',
        ].includes(k)
      )
        out[k] = v;
    return out;
  }

  /** Sends what was caught to `res` as it was. */
  replay(res: HttpResponse): void {
    if (res.headersSent || res.writableEnded) return;
    const body = Buffer.concat(this.chunks);
    const headers: Record<string, string> = { ...this.head };
    delete headers['transfer-encoding'];
    headers['content-length'] = String(body.length);
    res.writeHead(this.statusCode, headers);
    res.end(body);
  }
}

/** The result of a caught response, when it is one. */
export function resultOf(response: JsonRpcResponse | undefined): JsonObject | undefined {
  return response !== undefined && 'result' in response && isObject(response.result) ? response.result : undefined;
}
