// A raw `subscriptions/listen` request read message by message off its SSE stream, for tests
// that watch what a listener receives. The stream is aborted when the owning test ends.

import { modernBody, modernHeaders, type JsonObject } from '../e2e/wire.js';
import type { Owner } from './processes.js';
import { SseReader } from './sse.js';

export interface RawListen {
  status: number;
  /** The next JSON-RPC message; undefined once the stream ended. Fails after `ms` of silence. */
  next(ms?: number): Promise<any | undefined>;
  close(): void;
}

export async function rawListen(
  t: Owner,
  url: string,
  id: string,
  notifications: Record<string, unknown>,
  opts: { silenceMs?: number; init?: Record<string, unknown> } = {},
): Promise<RawListen> {
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  const res = await fetch(url, {
    method: 'POST',
    headers: modernHeaders('subscriptions/listen'),
    body: JSON.stringify(modernBody('subscriptions/listen', { notifications } as JsonObject, id)),
    signal: abort.signal,
    ...opts.init,
  } as RequestInit);
  // An aborted read ends the stream.
  const stream = new SseReader(res.body as ReadableStream<Uint8Array>, { endOnError: true });
  let pending: Promise<any | undefined> | undefined;
  return {
    status: res.status,
    next: (ms = opts.silenceMs ?? 5000) => {
      // A read cut short by the silence timer is picked up by the next call.
      const p = (pending ??= stream.nextMessage().finally(() => (pending = undefined)));
      let timer: NodeJS.Timeout | undefined;
      const silence = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no listen-stream message within ${ms} ms`)), ms);
      });
      return Promise.race([p, silence]).finally(() => clearTimeout(timer));
    },
    close: () => abort.abort(),
  };
}
