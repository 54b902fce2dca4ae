// The 2024-11-05 HTTP+SSE transport as a MessageChannel: one long GET whose SSE stream first names,
// in an `endpoint` event, the URI the client POSTs its messages to, then carries every server
// message as a `message` event. One open() is one upstream session (the server keys it to the
// stream, the SDK by `?sessionId=` in the endpoint); there is no session header, no protocol
// version header and no resumption, so a dropped stream ends the session.
//
// Errors are the HTTP client's: transport failures through toUpstreamError, a non-2xx answer as
// httpRefusal (upstream_unavailable), garbage as upstream_bad_response, and an endpoint that does
// not come within connectTimeoutMs as upstream_timeout.

import { CausewayError } from '../../errors.js';
import type { JsonRpcMessage } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import {
  discard,
  mediaType,
  refusalOf,
  badResponse,
  classify,
  DEFAULT_MAX_EVENT_BYTES,
  parseSse,
  type SseEvent,
  type Dispatcher,
  type Response,
  UpstreamHttp,
} from '../http/index.js';
import { toUpstreamError } from '../core/index.js';
import type { ChannelOpener, MessageChannel } from './message-channel.js';

export interface SseChannelOptions {
  /** The SSE endpoint (GET). */
  url: string;
  /** Configured `upstream.headers`: sent on the GET and on every POST. */
  headers?: Record<string, string>;
  /** Bounds connecting, the GET's answer and the `endpoint` event together. */
  connectTimeoutMs: number;
  /** How long a POST may take to be answered (its headers). Default 30000. */
  requestTimeoutMs?: number;
  maxEventBytes?: number;
  log: Logger;
  /**
   * The upstream's composed client (or any undici Dispatcher) to use; without one the opener makes (and close() ends)
   * its own.
   */
  dispatcher?: Dispatcher;
  /** A session's stream ended without us closing it (the server closed it, the connection dropped). */
  onDrop?(): void;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

function closedError(): CausewayError {
  return new CausewayError('upstream_unavailable', 'The upstream HTTP+SSE channel is closed');
}

function pathOf(url: URL): string {
  return `${url.pathname}${url.search}`;
}

/** Lower-cased configured headers, then the protocol's own, which win. */
export function withHeaders(
  configured: Record<string, string> | undefined,
  own: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(configured ?? {})) out[k.toLowerCase()] = v;
  return { ...out, ...own };
}

/**
 * Where the client must POST: the `endpoint` event's data resolved against the SSE URL. Only the
 * SSE URL's own origin is accepted: the POSTs carry the configured headers (credentials among
 * them), and an upstream must not be able to send them, or the session's traffic, to another host.
 */
export function resolveEndpoint(data: string, sseUrl: URL): URL {
  let endpoint: URL;
  try {
    endpoint = new URL(data.trim(), sseUrl);
  } catch (err) {
    throw badResponse('the endpoint event is not a URI', err);
  }
  if (endpoint.origin !== sseUrl.origin) {
    throw badResponse(`the endpoint event names another origin (${endpoint.origin}); refused`);
  }
  endpoint.hash = '';
  return endpoint;
}

export class SseChannelOpener implements ChannelOpener {
  private readonly url: URL;
  private readonly dispatcher: Dispatcher;
  private readonly own: UpstreamHttp | undefined;
  private readonly channels = new Set<SseChannel>();

  constructor(private readonly options: SseChannelOptions) {
    this.url = new URL(options.url);
    if (options.dispatcher) {
      this.dispatcher = options.dispatcher;
    } else {
      this.own = new UpstreamHttp({ connectTimeoutMs: options.connectTimeoutMs });
      this.dispatcher = this.own.dispatcher;
    }
  }

  async open(signal?: AbortSignal): Promise<MessageChannel> {
    signal?.throwIfAborted();
    const { connectTimeoutMs, log } = this.options;
    const stream = new AbortController();
    const onAbort = (): void => stream.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      stream.abort();
    }, connectTimeoutMs);

    let events: AsyncIterator<SseEvent> | undefined;
    try {
      const res = await this.dispatcher.request({
        origin: this.url.origin,
        path: pathOf(this.url),
        method: 'GET',
        headers: withHeaders(this.options.headers, { accept: 'text/event-stream' }),
        signal: stream.signal,
        headersTimeout: Math.max(1, Math.ceil(connectTimeoutMs)),
        // The stream is quiet between messages; closing it is our decision, not a timer's.
        bodyTimeout: 0,
      });
      // undici does not follow redirects unless told to: a 3xx is refused here like any non-2xx.
      if (res.statusCode < 200 || res.statusCode > 299) throw await refusalOf(res);
      const type = mediaType(res.headers['content-type']);
      if (type !== 'text/event-stream') {
        void discard(res.body);
        throw badResponse(`the SSE endpoint answered ${type || 'no Content-Type'}, not text/event-stream`);
      }
      events = parseSse(res.body, { maxEventBytes: this.options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES })[
        Symbol.asyncIterator
      ]();
      const endpoint = await firstEndpoint(events, this.url, log);
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      log.debug({ url: this.url.href, endpoint: endpoint.pathname }, 'upstream HTTP+SSE channel open');
      const channel = new SseChannel(this.options, this.dispatcher, endpoint, events, stream);
      this.channels.add(channel);
      channel.onClose(() => this.channels.delete(channel));
      return channel;
    } catch (err) {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      stream.abort();
      void events?.return?.(undefined).catch(() => undefined);
      if (signal?.aborted) throw signal.reason;
      if (timedOut) {
        throw new CausewayError(
          'upstream_timeout',
          `Upstream sent no endpoint event within ${connectTimeoutMs} ms`,
          undefined,
          { cause: err },
        );
      }
      throw toUpstreamError(err);
    }
  }

  /** Closes the channels still open, then the opener's own client (a Dispatcher passed in is the caller's to close). */
  async close(): Promise<void> {
    await Promise.all([...this.channels].map((c) => c.close()));
    await this.own?.close();
  }
}

/** Reads up to the `endpoint` event; the spec makes it the first, anything before it is skipped. */
async function firstEndpoint(events: AsyncIterator<SseEvent>, sseUrl: URL, log: Logger): Promise<URL> {
  for (;;) {
    const next = await events.next();
    if (next.done) throw badResponse('the SSE stream ended before its endpoint event');
    if (next.value.event === 'endpoint') return resolveEndpoint(next.value.data, sseUrl);
    log.warn({ event: next.value.event ?? 'message' }, 'upstream SSE event before the endpoint event dropped');
  }
}

class SseChannel implements MessageChannel {
  private readonly messageHandlers: Array<(message: JsonRpcMessage) => void> = [];
  private readonly closeHandlers: Array<(reason: Error | undefined) => void> = [];
  /** Messages that came before anyone listened. */
  private pending: JsonRpcMessage[] = [];
  private ended: { reason: Error | undefined } | undefined;
  private readonly reading: Promise<void>;
  /** Aborted on close, so POSTs in flight end with the channel. */
  private readonly posts = new AbortController();

  constructor(
    private readonly options: SseChannelOptions,
    private readonly dispatcher: Dispatcher,
    private readonly endpoint: URL,
    private readonly events: AsyncIterator<SseEvent>,
    private readonly stream: AbortController,
  ) {
    this.reading = this.read();
  }

  get closed(): boolean {
    return this.ended !== undefined;
  }

  async send(message: JsonRpcMessage): Promise<void> {
    if (this.ended) throw closedError();
    let res: Response;
    try {
      const timeout = Math.max(1, Math.ceil(this.options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS));
      res = await this.dispatcher.request({
        origin: this.endpoint.origin,
        path: pathOf(this.endpoint),
        method: 'POST',
        headers: withHeaders(this.options.headers, { 'content-type': 'application/json' }),
        body: JSON.stringify(message),
        signal: this.posts.signal,
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
    } catch (err) {
      throw this.ended ? closedError() : toUpstreamError(err);
    }
    if (res.statusCode < 200 || res.statusCode > 299) throw await refusalOf(res);
    await discard(res.body);
  }

  onMessage(handler: (message: JsonRpcMessage) => void): void {
    this.messageHandlers.push(handler);
    const queued = this.pending;
    this.pending = [];
    for (const m of queued) this.deliver(m);
  }

  onClose(handler: (reason: Error | undefined) => void): void {
    if (this.ended) {
      const { reason } = this.ended;
      queueMicrotask(() => handler(reason));
      return;
    }
    this.closeHandlers.push(handler);
  }

  async close(): Promise<void> {
    this.end(undefined);
    await this.reading;
  }

  private async read(): Promise<void> {
    let reason: Error;
    try {
      for (;;) {
        const next = await this.events.next();
        if (next.done) break;
        this.event(next.value);
      }
      reason = new CausewayError('upstream_unavailable', 'The upstream closed its HTTP+SSE stream');
    } catch (err) {
      const mapped = toUpstreamError(err);
      reason =
        mapped instanceof Error
          ? mapped
          : new CausewayError('upstream_unavailable', undefined, undefined, { cause: err });
    }
    if (!this.ended) {
      this.options.log.debug({ err: reason }, 'upstream HTTP+SSE stream lost');
      this.options.onDrop?.();
    }
    this.end(reason);
  }

  private event(ev: SseEvent): void {
    if (this.ended) return;
    const type = ev.event ?? 'message';
    if (type !== 'message') {
      this.options.log.debug({ event: type }, 'upstream SSE event of another type ignored');
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(ev.data);
    } catch {
      this.options.log.warn({ bytes: ev.data.length }, 'upstream SSE message that is not JSON dropped');
      return;
    }
    // 2024-11-05 JSON-RPC allows batches; the SDK never sends them, but they cost nothing to take.
    for (const item of Array.isArray(value) ? value : [value]) {
      let message: JsonRpcMessage;
      try {
        message = classify(item).message;
      } catch (err) {
        this.options.log.warn({ err }, 'upstream SSE message that is not a JSON-RPC message dropped');
        continue;
      }
      if (this.messageHandlers.length === 0) this.pending.push(message);
      else this.deliver(message);
    }
  }

  private deliver(message: JsonRpcMessage): void {
    for (const h of this.messageHandlers) {
      try {
        h(message);
      } catch (err) {
        this.options.log.error({ err }, 'HTTP+SSE channel message handler threw');
      }
    }
  }

  /** The one way the channel ends: by us (undefined) or lost; handlers hear it once. */
  private end(reason: Error | undefined): void {
    if (this.ended) return;
    this.ended = { reason };
    this.stream.abort();
    this.posts.abort();
    void this.events.return?.(undefined).catch(() => undefined);
    const handlers = this.closeHandlers.splice(0);
    for (const h of handlers) {
      try {
        h(reason);
      } catch (err) {
        this.options.log.error({ err }, 'HTTP+SSE channel close handler threw');
      }
    }
  }
}
