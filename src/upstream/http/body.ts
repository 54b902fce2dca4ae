// Bounded reads of undici response bodies. Exceeding the byte cap, or a Content-Length announcing
// more than it, is upstream_bad_response and the body is destroyed. Unread bodies are drained in the
// background (so keep-alive sockets are reused) but never waited on for long.

import { StringDecoder } from 'node:string_decoder';
import { CausewayError } from '../../errors.js';

export interface ResponseBody extends AsyncIterable<Uint8Array> {
  destroy(err?: Error): unknown;
  dump(opts?: { limit?: number }): Promise<void>;
  /** With destroyOnReturn false, leaving a loop over it early leaves the body open (Node Readable). */
  iterator(options: { destroyOnReturn: boolean }): AsyncIterable<Uint8Array>;
  on(event: 'error', listener: (err: Error) => void): this;
  on(event: 'close', listener: () => void): this;
  on(event: 'data', listener: (chunk: Uint8Array) => void): this;
  resume(): this;
}

export function tooLarge(max: number): CausewayError {
  return new CausewayError('upstream_bad_response', `Upstream response exceeds ${max} bytes`);
}

const DISCARD_LIMIT = 64 * 1024;
const DISCARD_WAIT_MS = 1000;

export function checkContentLength(body: ResponseBody, header: string | string[] | undefined, max: number): void {
  const value = Array.isArray(header) ? header[0] : header;
  if (value !== undefined && Number(value) > max) {
    body.destroy();
    throw tooLarge(max);
  }
}

export async function readText(body: ResponseBody, max: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > max) {
      body.destroy();
      throw tooLarge(max);
    }
    chunks.push(chunk);
  }
  return utf8Text(chunks);
}

/**
 * The UTF-8 text of a body's chunks, decoded one by one rather than first copied into one buffer:
 * that copy is one native allocation the size of the body (157 KB for a tools/list of 1,000 tools)
 * made and freed per read, whose freed space the allocator keeps and fragments, ~5 KB of RSS per
 * pooled session that read its tools.
 */
export function utf8Text(chunks: readonly Uint8Array[]): string {
  const [only] = chunks;
  if (chunks.length === 1) return Buffer.from(only!.buffer, only!.byteOffset, only!.byteLength).toString('utf8');
  const decoder = new StringDecoder('utf8');
  let text = '';
  for (const chunk of chunks) text += decoder.write(chunk);
  return text + decoder.end();
}

/** A refusal's body as text, or undefined when it holds more than `max` bytes or breaks off (then destroyed). */
export async function readRefusal(body: ResponseBody, max: number): Promise<string | undefined> {
  try {
    return await readText(body, max);
  } catch {
    body.destroy();
    return undefined;
  }
}

/** Frees the connection after a response we do not read; settles within a second, never rejects. */
export function discard(body: ResponseBody): Promise<void> {
  const timer = setTimeout(() => body.destroy(), DISCARD_WAIT_MS);
  timer.unref();
  return body
    .dump({ limit: DISCARD_LIMIT })
    .catch(() => body.destroy())
    .then(() => clearTimeout(timer));
}

/**
 * The rest of a body whose awaited message was read (normally just its end), read in the
 * background so the connection is reused; destroyed only if more than a little, or not soon, follows.
 */
export function finish(body: ResponseBody): void {
  const timer = setTimeout(() => body.destroy(), DISCARD_WAIT_MS);
  timer.unref();
  let rest = 0;
  body
    .on('error', () => undefined)
    .on('close', () => clearTimeout(timer))
    .on('data', (chunk) => {
      rest += chunk.byteLength;
      if (rest > DISCARD_LIMIT) body.destroy();
    })
    .resume();
}

/** Drops a body after a failure; its own abort error is nobody's to handle. */
export function abandon(body: ResponseBody): void {
  body.on('error', () => undefined);
  body.destroy();
}

export function mediaType(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return '';
  // What upstreams send nearly always, as it is: nothing to cut or fold.
  if (value === 'application/json' || value === 'text/event-stream') return value;
  const semi = value.indexOf(';');
  return (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
}
