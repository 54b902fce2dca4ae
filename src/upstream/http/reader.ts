// The one reader of an upstream's answers [L-TR]: a POSTed request's, JSON or an SSE stream, read
// as undici hands it over (AnswerReader, the handler the warm lane's call and exchange() both
// are), a stream taken up with GET (consume), and a 2026-07-28 answer's messages (sseMessages).
// Each event's messages are routed by inbound.ts. A 4xx or 5xx is a lost session
// (core/lost-session.ts), the upstream's in-band JSON-RPC error, or a refusal.
//
// Its text/event-stream parser (WHATWG HTML "Parsing an event stream"): bytes in, events out,
// CRLF, CR and LF line ends split anywhere across chunks, a leading BOM, comments, and events whose
// data is empty (2025-11-25 priming events are yielded so their id can be kept). An event larger
// than maxEventBytes (counted in decoded characters) is upstream_bad_response.

import type { IncomingHttpHeaders } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { CausewayError, refusesEra } from '../../errors.js';
import type { JsonRpcResponse } from '../../jsonrpc.js';
import { abandon, finish, mediaType, tooLarge, utf8Text, type ResponseBody } from './body.js';
import { isConnectionDrop, losesSession, REFUSAL_BODY_LIMIT, SessionExpiredError } from '../core/index.js';
import type { Controller, Handler } from './compose/index.js';
import { errorBodyOf, httpRefusal, type SentTo } from './dispatcher.js';
import { badResponse, decodeMessages, route, routeEvent, type Cursor, type Inbound, type Routed } from './inbound.js';
import type { SseEvent, UpstreamMessage } from './inbound.js';

export type { SseEvent } from './inbound.js';

export interface SseParserOptions {
  maxEventBytes?: number;
}

export const DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024;

const LF = 10;

/** What a feed that completed no event returns: never written to. */
const NO_EVENTS: SseEvent[] = [];

export class SseParser {
  private readonly maxEventBytes: number;
  // Not TextDecoder: each one makes an ICU converter, which cost a parser per SSE answer ~3 us.
  // Neither strips a BOM (feed does); both replace bad sequences with U+FFFD.
  private readonly decoder = new StringDecoder('utf8');
  private buf = '';
  private scanFrom = 0;
  private skipLF = false;
  private started = false;
  private eventSize = 0;
  // The event being read, field by field: reset in place, so an event costs its own object and
  // data string, no more (a second data line is the only one to make an array).
  private id: string | undefined = undefined;
  private name: string | undefined = undefined;
  private data: string | undefined = undefined;
  private moreData: string[] | undefined = undefined;
  private retry: number | undefined = undefined;
  private hasField = false;

  constructor(options: SseParserOptions = {}) {
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  }

  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    return this.feed(text);
  }

  /** Flushes the decoder. An event not closed by a blank line is discarded, as the spec says. */
  end(): SseEvent[] {
    const out = this.feed(this.decoder.end());
    this.buf = '';
    this.scanFrom = 0;
    this.reset();
    return out;
  }

  private feed(input: string): SseEvent[] {
    let out: SseEvent[] | undefined;
    let text = input;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.skipLF && text.length > 0) {
      this.skipLF = false;
      if (text.charCodeAt(0) === LF) text = text.slice(1);
    }
    if (text.length === 0) return NO_EVENTS;

    const buf = this.buf.length === 0 ? text : this.buf + text;
    let start = 0;
    let from = this.scanFrom;
    // The next CR and LF at or after `from`, each searched again only once passed (-1: none left).
    let cr = -2;
    let lf = -2;
    for (;;) {
      if (cr !== -1 && cr < from) cr = buf.indexOf('\r', from);
      if (lf !== -1 && lf < from) lf = buf.indexOf('\n', from);
      const end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      if (end === -1) break;
      let next = end + 1;
      if (end === cr) {
        if (next === buf.length) this.skipLF = true;
        else if (buf.charCodeAt(next) === LF) next++;
      }
      if (start === end) {
        const ev = this.dispatch();
        if (ev !== undefined) (out ??= []).push(ev);
      } else this.line(buf, start, end);
      start = from = next;
    }
    this.buf = start === 0 ? buf : buf.slice(start);
    this.scanFrom = this.buf.length;
    if (this.eventSize + this.buf.length > this.maxEventBytes) this.tooLarge();
    return out ?? NO_EVENTS;
  }

  /** The line buf[start, end), not empty: a field of the event being read, or a comment. */
  private line(buf: string, start: number, end: number): void {
    if (buf.charCodeAt(start) === 0x3a) return;

    this.eventSize += end - start + 1;
    if (this.eventSize > this.maxEventBytes) this.tooLarge();

    let colon = buf.indexOf(':', start);
    if (colon === -1 || colon > end) colon = end;
    let at = colon < end ? colon + 1 : end;
    if (at < end && buf.charCodeAt(at) === 0x20) at++;
    const n = colon - start;

    if (n === 4 && buf.startsWith('data', start)) {
      const value = buf.slice(at, end);
      if (this.data === undefined) this.data = value;
      else (this.moreData ??= [this.data]).push(value);
      this.hasField = true;
    } else if (n === 5 && buf.startsWith('event', start)) {
      this.name = buf.slice(at, end);
      this.hasField = true;
    } else if (n === 2 && buf.startsWith('id', start)) {
      const value = buf.slice(at, end);
      if (!value.includes('\0')) {
        this.id = value;
        this.hasField = true;
      }
    } else if (n === 5 && buf.startsWith('retry', start)) {
      const value = buf.slice(at, end);
      if (/^\d+$/.test(value)) {
        this.retry = Number(value);
        this.hasField = true;
      }
    }
  }

  /** A blank line: the event read so far, if it had a field. */
  private dispatch(): SseEvent | undefined {
    let ev: SseEvent | undefined;
    if (this.hasField) {
      const data = this.moreData !== undefined ? this.moreData.join('\n') : (this.data ?? '');
      ev = { data };
      if (this.id !== undefined) ev.id = this.id;
      if (this.name !== undefined && this.name !== '') ev.event = this.name;
      if (this.retry !== undefined) ev.retry = this.retry;
    }
    this.reset();
    return ev;
  }

  private reset(): void {
    this.id = undefined;
    this.name = undefined;
    this.data = undefined;
    this.moreData = undefined;
    this.retry = undefined;
    this.hasField = false;
    this.eventSize = 0;
  }

  private tooLarge(): never {
    throw new CausewayError(
      'upstream_bad_response',
      `Upstream sent an SSE event larger than ${this.maxEventBytes} bytes`,
    );
  }
}

/** Parses an async byte stream (an undici body) into events; breaking out destroys the body. */
export async function* parseSse(
  body: AsyncIterable<Uint8Array | string>,
  options?: SseParserOptions,
): AsyncGenerator<SseEvent, void, undefined> {
  const parser = new SseParser(options);
  for await (const chunk of body) {
    for (const ev of parser.push(chunk)) yield ev;
  }
  for (const ev of parser.end()) yield ev;
}

/** The messages of an SSE body (a 2026-07-28 answer's: every event with data), a chunk's at a time. */
export async function* sseMessages(
  body: AsyncIterable<Uint8Array | string>,
  maxEventBytes: number,
): AsyncGenerator<Iterable<UpstreamMessage>, void, undefined> {
  const parser = new SseParser({ maxEventBytes });
  for await (const chunk of body) yield messagesOf(parser.push(chunk));
  yield messagesOf(parser.end());
}

function* messagesOf(events: SseEvent[]): Generator<UpstreamMessage, void, undefined> {
  for (const ev of events) if (ev.data !== '') yield* decodeMessages(ev.data);
}

/** The messages of a whole SSE text (an answer caught on its way to the client). */
export function sseTextMessages(text: string, maxEventBytes: number): Iterable<UpstreamMessage> {
  return messagesOf(new SseParser({ maxEventBytes }).push(text));
}

export interface ReadLimits {
  maxEventBytes: number;
  /** Cap on one HTTP response body; undefined for long-lived streams. */
  maxBodyBytes: number | undefined;
}

export type Outcome =
  | { response: JsonRpcResponse }
  | { ended: true; events: number }
  | { dropped: unknown; events: number };

/**
 * Reads one SSE connection taken up with GET (a call's stream resumed, or the session's standalone
 * stream) to the call's response, and reports a clean end or a drop, so the caller can resume.
 */
export async function consume(
  io: Inbound,
  ctx: Routed & { scope: { aborted: boolean } },
  body: ResponseBody,
  cursor: Cursor,
  limits: ReadLimits,
): Promise<Outcome> {
  // One loop over the body's chunks, the byte cap and the SSE parser inline (no generator per
  // layer). Leaving it at the response must not destroy the body (an AbortError, and its stack,
  // per call): the rest, normally just its end, is drained by finish().
  const parser = new SseParser({ maxEventBytes: limits.maxEventBytes });
  const max = limits.maxBodyBytes;
  let total = 0;
  let events = 0;
  try {
    for await (const chunk of body.iterator({ destroyOnReturn: false })) {
      total += chunk.byteLength;
      if (max !== undefined && total > max) throw tooLarge(max);
      for (const ev of parser.push(chunk)) {
        events += 1;
        const answer = routeEvent(io, ctx, cursor, ev);
        if (answer !== undefined) {
          finish(body);
          return { response: answer };
        }
      }
    }
    for (const ev of parser.end()) {
      events += 1;
      const answer = routeEvent(io, ctx, cursor, ev);
      if (answer !== undefined) return { response: answer };
    }
    return { ended: true, events };
  } catch (err) {
    abandon(body);
    if (ctx.scope.aborted) throw err;
    if (ctx.lenient || isConnectionDrop(err)) return { dropped: err, events };
    throw err;
  }
}

/** How an answer is read: by its status and content type (Refusal: a 4xx or 5xx, see refused()). */
const enum Reading {
  Waiting,
  Json,
  Sse,
  Refusal,
}

/** The most an answer may hold: the client's (UpstreamClient's) or the session's stream context's. */
export interface AnswerLimits {
  readonly maxResponseBytes: number;
  readonly maxEventBytes: number;
}

/**
 * The answer to one POSTed request, read as undici hands it over (an undici dispatch handler): JSON
 * or an SSE stream, each event routed as it comes (to `io` and `ctx`), the call's cursor (this
 * reader's lastEventId and retryMs) kept. It ends in one of three: onAnswer (the response, or
 * the upstream's JSON-RPC error to it), onFailure (a bad answer, a refusal, a lost session as
 * SessionExpiredError, a transport error) or onStreamEnd (the stream ended or dropped before the
 * response: a caller with an event id follows it). The subclass sets `over` once its call is over;
 * what comes after is drained, and a stream left running is cut.
 */
export abstract class AnswerReader implements Handler, Cursor {
  protected abstract readonly io: Inbound;
  protected abstract readonly ctx: Routed;
  protected abstract readonly limits: AnswerLimits;
  lastEventId: string | undefined = undefined;
  retryMs: number | undefined = undefined;
  /** Events read, on this answer's stream. */
  protected events = 0;
  protected controller: Controller | undefined = undefined;
  /** undici is done with the request (its end or its error came). */
  protected closed = false;
  /** The call is over (answered, failed, stopped): nothing read later counts. */
  protected over = false;
  private reading = Reading.Waiting;
  private status = 0;
  private bytes = 0;
  /** Bytes that came after the call was over, on a stream the upstream left open. */
  private after = 0;
  private chunks: Buffer[] | undefined = undefined;
  private parser: SseParser | undefined = undefined;

  /** Where the request went, for a refusal's words: asked only when one comes. */
  protected abstract refusedBy(): { upstream: string; to: SentTo | undefined };
  protected abstract onAnswer(response: JsonRpcResponse): void;
  protected abstract onFailure(err: unknown): void;
  /** `dropped`: the connection's error; undefined for a clean end. */
  protected abstract onStreamEnd(dropped: unknown): void;

  onRequestStart(controller: Controller, _context?: unknown): void {
    this.controller = controller;
  }

  onResponseStart(controller: Controller, status: number, headers: IncomingHttpHeaders): void {
    if (this.over) return;
    this.status = status;
    if (status >= 400) {
      this.reading = Reading.Refusal;
      this.chunks = [];
      return;
    }
    if (status < 200 || status >= 300 || status === 202 || status === 204) {
      return this.failRead(controller, badResponse(`HTTP ${status} to a request`));
    }
    const max = this.limits.maxResponseBytes;
    const type = mediaType(headers['content-type']);
    if (type === 'application/json') {
      const length = headers['content-length'];
      if (length !== undefined && Number(length) > max) return this.failRead(controller, tooLarge(max));
      this.reading = Reading.Json;
      this.chunks = [];
    } else if (type === 'text/event-stream') {
      this.reading = Reading.Sse;
      this.parser = new SseParser({ maxEventBytes: Math.min(this.limits.maxEventBytes, max) });
    } else {
      this.failRead(controller, badResponse(`unexpected content-type ${JSON.stringify(type.slice(0, 80))}`));
    }
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.over) {
      // Normally just the stream's end follows the answer; a stream left running is dropped.
      const after = (this.after += chunk.length);
      if (after > REFUSAL_BODY_LIMIT) controller.abort(badResponse('the stream went on after the response'));
      return;
    }
    this.bytes += chunk.length;
    const max = this.limits.maxResponseBytes;
    switch (this.reading) {
      case Reading.Json:
        if (this.bytes > max) return this.failRead(controller, tooLarge(max));
        this.chunks!.push(chunk);
        return;
      case Reading.Sse:
        if (this.bytes > max) return this.failRead(controller, tooLarge(max));
        try {
          for (const ev of this.parser!.push(chunk)) if (this.event(ev)) return;
        } catch (err) {
          this.failRead(controller, err);
        }
        return;
      case Reading.Refusal:
        if (this.bytes <= REFUSAL_BODY_LIMIT) this.chunks!.push(chunk);
    }
  }

  onResponseEnd(_controller?: Controller, _trailers?: IncomingHttpHeaders): void {
    this.closed = true;
    if (this.over) return;
    try {
      switch (this.reading) {
        case Reading.Json: {
          const text = utf8Text(this.chunks!);
          const answer = route(this.io, this.ctx, decodeMessages(text));
          if (this.over) return;
          return this.onAnswer(answer ?? throwNoResponse());
        }
        case Reading.Sse:
          for (const ev of this.parser!.end()) if (this.event(ev)) return;
          return this.onStreamEnd(undefined);
        case Reading.Refusal:
          return this.refused();
      }
    } catch (err) {
      this.onFailure(err);
    }
  }

  onResponseError(_controller: Controller, err: Error): void {
    this.closed = true;
    if (this.over) return;
    if (this.reading === Reading.Sse && isConnectionDrop(err)) return this.onStreamEnd(err);
    // A refusal whose body broke off is read as one too large to read.
    if (this.reading === Reading.Refusal) return this.refused(true);
    this.onFailure(err);
  }

  /** One SSE event; true once the call is over. */
  private event(ev: SseEvent): boolean {
    this.events += 1;
    const answer = routeEvent(this.io, this.ctx, this, ev);
    if (answer !== undefined) this.onAnswer(answer);
    return this.over;
  }

  private failRead(controller: Controller, err: unknown): void {
    this.controller ??= controller;
    this.onFailure(err);
  }

  /** A 4xx with a JSON-RPC error body is the upstream's in-band answer; anything else is a refusal. */
  private refused(broken = false): void {
    const { status, ctx } = this;
    const readable = !broken && this.bytes <= REFUSAL_BODY_LIMIT;
    const text = readable ? utf8Text(this.chunks!) : undefined;
    const by = this.refusedBy();
    // The session is gone: nothing ran, so the request may go on a new one.
    if (ctx.session.sessionId !== undefined && losesSession(status, text, ctx.id)) {
      return this.onFailure(new SessionExpiredError(by.upstream));
    }
    const rpc = errorBodyOf(text);
    // -32022 is 2026-07-28's: a legacy session's request refused with it is an upstream now
    // modern (era.ts).
    if (status < 500 && rpc !== undefined && ctx.id !== undefined && !refusesEra(rpc.error)) {
      return this.onAnswer({ jsonrpc: '2.0', id: ctx.id, error: rpc.error });
    }
    this.onFailure(httpRefusal(status, rpc?.error.message.slice(0, 200), rpc?.error, by.to));
  }
}

function throwNoResponse(): never {
  throw badResponse('no response carries the request id');
}
