// Bounded reads of undici response bodies. Exceeding the byte cap, or a Content-Length announcing
// more than it, is upstream_bad_response and the body is destroyed. Unread bodies are drained in the
// background (so keep-alive sockets are reused) but never waited on for long.

import { CausewayError } from '../errors.js';

export interface ResponseBody extends AsyncIterable<Uint8Array> {
  destroy(err?: Error): unknown;
  dump(opts?: { limit?: number }): Promise<void>;
}

function tooLarge(max: number): CausewayError {
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

/** Yields the body's chunks and fails once more than `max` bytes went through. */
export async function* limitBytes(body: ResponseBody, max: number): AsyncGenerator<Uint8Array, void, undefined> {
  let total = 0;
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > max) {
      body.destroy();
      throw tooLarge(max);
    }
    yield chunk;
  }
}

export async function readText(body: ResponseBody, max: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of limitBytes(body, max)) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
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

export function mediaType(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return (value ?? '').split(';')[0]!.trim().toLowerCase();
}
