// The tests' one `text/event-stream` decoder, written from the WHATWG event-stream rules and
// independent of Causeway's own parser (src/upstream/http/sse.ts), so a test never checks Causeway's
// output with Causeway's code. Lines end in CRLF, LF or CR; a leading BOM is dropped; a
// `field: value` line loses one space after the colon; a `:` line is a comment; a blank line
// ends an event. An event is reported when its block had any field (a block of comments only is
// not); its data lines are joined with LF. An event not ended by a blank line when the stream
// ends is never reported, as a real client would never see it.

export interface SseEvent {
  /** The `event:` field, when the block had one. */
  event?: string;
  /** The `id:` field, when the block had one (an id with a NUL is ignored). */
  id?: string;
  /** The data lines joined with LF; '' when there were none. */
  data: string;
  /** The `retry:` field, when it was all digits. */
  retry?: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any */

/** Incremental decoder: `push` text as it arrives, `take` each complete event in order. */
export class SseDecoder {
  #buf = '';
  #started = false;
  /** A chunk ended in CR: a LF at the start of the next one belongs to that line end. */
  #afterCr = false;
  /** The fields of the event being read; undefined until a known field is seen. */
  #event: { event?: string; id?: string; retry?: number; data: string[] } | undefined;
  #comments = 0;

  /** Comment lines (`:` keep-alives) decoded so far. */
  get comments(): number {
    return this.#comments;
  }

  push(chunk: string): void {
    if (!this.#started && chunk !== '') {
      this.#started = true;
      if (chunk.startsWith('\uFEFF')) chunk = chunk.slice(1);
    }
    this.#buf += chunk;
  }

  /** The next complete event, or undefined until more text arrives. Lines are read lazily. */
  take(): SseEvent | undefined {
    for (let line = this.#line(); line !== undefined; line = this.#line()) {
      if (line === '') {
        const e = this.#event;
        this.#event = undefined;
        if (!e) continue;
        const { data, ...fields } = e;
        return { ...fields, data: data.join('\n') };
      }
      if (line.startsWith(':')) {
        this.#comments += 1;
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') (this.#event ??= { data: [] }).data.push(value);
      else if (field === 'event') (this.#event ??= { data: [] }).event = value;
      else if (field === 'id' && !value.includes('\0')) (this.#event ??= { data: [] }).id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) (this.#event ??= { data: [] }).retry = Number(value);
      // Any other field (or a bad id / retry) is ignored.
    }
    return undefined;
  }

  /** Every complete event buffered so far. */
  takeAll(): SseEvent[] {
    const out: SseEvent[] = [];
    for (let e = this.take(); e !== undefined; e = this.take()) out.push(e);
    return out;
  }

  #line(): string | undefined {
    if (this.#afterCr && this.#buf !== '') {
      if (this.#buf.startsWith('\n')) this.#buf = this.#buf.slice(1);
      this.#afterCr = false;
    }
    const m = /\r\n|\r|\n/.exec(this.#buf);
    if (!m) return undefined;
    const line = this.#buf.slice(0, m.index);
    this.#buf = this.#buf.slice(m.index + m[0].length);
    if (m[0] === '\r' && this.#buf === '') this.#afterCr = true;
    return line;
  }
}

/** Every event of a whole `text/event-stream` body, in order. */
export function parseSse(text: string): SseEvent[] {
  const d = new SseDecoder();
  d.push(text);
  return d.takeAll();
}

/** JSON.parse, or undefined when the text is not JSON. */
function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The JSON-RPC messages of a whole SSE body: the data of each event that has any, JSON-parsed.
 * Data that is not JSON throws, or with `{ invalid: 'undefined' }` stands as undefined in its
 * place (for a checker that reports it).
 */
export function sseMessages(text: string, opts: { invalid?: 'throw' | 'undefined' } = {}): any[] {
  return parseSse(text)
    .filter((e) => e.data !== '')
    .map((e) => (opts.invalid === 'undefined' ? tryJson(e.data) : JSON.parse(e.data)));
}

/** What SseReader reads: a fetch body, or any async iterable of bytes or text (a node stream). */
export type SseSource = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

export interface SseReaderOptions {
  /** A failed read (the stream aborted or reset) ends the stream instead of throwing. */
  endOnError?: boolean;
}

/** Events off a stream that arrives in chunks, one at a time, read no further than needed. */
export class SseReader {
  readonly #decoder = new SseDecoder();
  readonly #text = new TextDecoder();
  readonly #read: () => Promise<{ done: boolean; value?: Uint8Array | string }>;
  readonly #endOnError: boolean;
  #ended = false;

  constructor(source: SseSource, opts: SseReaderOptions = {}) {
    this.#endOnError = opts.endOnError ?? false;
    if ('getReader' in source) {
      const reader = source.getReader();
      this.#read = () => reader.read();
    } else {
      const it = source[Symbol.asyncIterator]();
      this.#read = async () => {
        const r = await it.next();
        return r.done ? { done: true } : { done: false, value: r.value };
      };
    }
  }

  /** Comment lines (`:` keep-alives) read so far. */
  get comments(): number {
    return this.#decoder.comments;
  }

  /** The next event; undefined once the stream has ended. */
  async next(): Promise<SseEvent | undefined> {
    for (;;) {
      const e = this.#decoder.take();
      if (e) return e;
      if (this.#ended) return undefined;
      let r: { done: boolean; value?: Uint8Array | string };
      try {
        r = await this.#read();
      } catch (err) {
        if (!this.#endOnError) throw err;
        r = { done: true };
      }
      if (r.done) {
        this.#ended = true;
        this.#decoder.push(this.#text.decode());
      } else if (typeof r.value === 'string') this.#decoder.push(r.value);
      else if (r.value) this.#decoder.push(this.#text.decode(r.value, { stream: true }));
    }
  }

  /**
   * The next event with data, its data JSON-parsed (throws when it is not JSON); undefined once the stream has ended.
   */
  async nextMessage(): Promise<any | undefined> {
    for (;;) {
      const e = await this.next();
      if (e === undefined) return undefined;
      if (e.data !== '') return JSON.parse(e.data);
    }
  }
}
