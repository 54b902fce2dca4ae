// Incremental text/event-stream parser (WHATWG HTML "Parsing an event stream"): bytes in, events out.
// Tolerates CRLF, CR and LF line ends split anywhere across chunks, a leading BOM, comments, and
// events whose data is empty (2025-11-25 priming events are yielded so their id can be kept).
// An event larger than maxEventBytes (counted in decoded characters) is upstream_bad_response.

import { StringDecoder } from 'node:string_decoder';
import { CausewayError } from '../../errors.js';

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  retry?: number;
}

export interface SseParserOptions {
  maxEventBytes?: number;
}

export const DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024;

const LF = 10;

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
  private fields: { id?: string; event?: string; data?: string[]; retry?: number } = {};
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
    this.fields = {};
    this.hasField = false;
    this.eventSize = 0;
    return out;
  }

  private feed(input: string): SseEvent[] {
    const out: SseEvent[] = [];
    let text = input;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.skipLF && text.length > 0) {
      this.skipLF = false;
      if (text.charCodeAt(0) === LF) text = text.slice(1);
    }
    if (text.length === 0) return out;

    this.buf += text;
    const buf = this.buf;
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
      this.line(buf.slice(start, end), out);
      start = from = next;
    }
    this.buf = buf.slice(start);
    this.scanFrom = this.buf.length;
    if (this.eventSize + this.buf.length > this.maxEventBytes) this.tooLarge();
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line.length === 0) {
      this.dispatch(out);
      return;
    }
    if (line.charCodeAt(0) === 0x3a) return;

    this.eventSize += line.length + 1;
    if (this.eventSize > this.maxEventBytes) this.tooLarge();

    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);

    switch (name) {
      case 'data':
        (this.fields.data ??= []).push(value);
        this.hasField = true;
        break;
      case 'event':
        this.fields.event = value;
        this.hasField = true;
        break;
      case 'id':
        if (!value.includes('\0')) {
          this.fields.id = value;
          this.hasField = true;
        }
        break;
      case 'retry':
        if (/^\d+$/.test(value)) {
          this.fields.retry = Number(value);
          this.hasField = true;
        }
        break;
      default:
        break;
    }
  }

  private dispatch(out: SseEvent[]): void {
    if (this.hasField) {
      const { id, event, data, retry } = this.fields;
      const ev: SseEvent = { data: data === undefined ? '' : data.length === 1 ? data[0]! : data.join('\n') };
      if (id !== undefined) ev.id = id;
      if (event !== undefined && event !== '') ev.event = event;
      if (retry !== undefined) ev.retry = retry;
      out.push(ev);
    }
    this.fields = {};
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
