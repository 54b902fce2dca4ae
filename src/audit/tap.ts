// The JSON-RPC errors an audited request was answered with, read off the bytes written to its
// response as they go out. A legacy client's answer is streamed from the upstream byte for byte
// (passthrough/legacy.ts), and a modern upstream's relayed likewise: no stage parses it, so the
// audit reads its own copy here. Bounded: a JSON body is kept up to LIMIT bytes, an SSE event
// likewise; past that the answer is a large result, not an error. JSON or SSE is told by the first
// byte, since a face may pass its headers to writeHead, where getHeader does not see them; an
// answer that starts as neither (compressed) is not read.

import type { HttpResponse } from '../egress/index.js';
import { isObject, type RequestId } from '../jsonrpc.js';

const LIMIT = 64 * 1024;

export class AnswerTap {
  /** The JSON body so far, or the SSE event being read. */
  private text = '';
  private sse: boolean | undefined = undefined;
  /** Nothing more is read: compressed, or a JSON body over LIMIT. */
  private stopped = false;
  /** An SSE event over LIMIT is being skipped until its blank line. */
  private skipping = false;
  /** Error codes by request id; `null` for an error answered with a null id. */
  private readonly codes = new Map<RequestId | null, number>();

  constructor(res: HttpResponse) {
    // The response's own methods, wrapped on this one response only: every face writes through them.
    const out = res as unknown as { write: (...a: unknown[]) => boolean; end: (...a: unknown[]) => unknown };
    const write = out.write;
    const end = out.end;
    out.write = (...a: unknown[]) => {
      this.read(a[0]);
      return write.apply(res, a);
    };
    out.end = (...a: unknown[]) => {
      if (typeof a[0] !== 'function') this.read(a[0]);
      return end.apply(res, a);
    };
  }

  /** The JSON-RPC error code the answer gave request `id`, or undefined when it gave none that was read. */
  codeFor(id: RequestId | null): number | undefined {
    if (this.sse === false && !this.stopped) this.readJson();
    return this.codes.get(id) ?? this.codes.get(null);
  }

  private read(chunk: unknown): void {
    if (this.stopped || chunk === undefined || chunk === null) return;
    const text = typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString() : '';
    if (this.sse === undefined) this.start(text);
    if (this.stopped) return;
    if (this.sse) this.readEvents(text);
    else if (this.text.length + text.length > LIMIT) this.stop();
    else this.text += text;
  }

  /** Told by the first bytes: a JSON body opens with `{` or `[`, an SSE stream with a field name or a `:` comment. */
  private start(first: string): void {
    const opening = first.trimStart();
    if (opening === '') return;
    if (/^[[{]/.test(opening)) this.sse = false;
    else if (/^[a-z:]/i.test(opening)) this.sse = true;
    else this.stop();
  }

  private stop(): void {
    this.stopped = true;
    this.text = '';
  }

  /** Whole events are read as they end; the one still arriving is kept, or skipped past LIMIT. */
  private readEvents(text: string): void {
    this.text += text;
    const events = this.text.split(/\r?\n\r?\n/);
    this.text = events.pop()!;
    for (const event of events) {
      if (this.skipping) this.skipping = false;
      else this.readEvent(event);
    }
    if (this.text.length > LIMIT) {
      this.text = '';
      this.skipping = true;
    }
  }

  private readEvent(event: string): void {
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
      .join('\n');
    if (data !== '') this.note(parsed(data));
  }

  private readJson(): void {
    const body = parsed(this.text);
    for (const message of Array.isArray(body) ? body : [body]) this.note(message);
    this.stop();
  }

  private note(message: unknown): void {
    if (!isObject(message) || !isObject(message.error) || typeof message.error.code !== 'number') return;
    const id = message.id;
    this.codes.set(typeof id === 'string' || typeof id === 'number' ? id : null, message.error.code);
  }
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
