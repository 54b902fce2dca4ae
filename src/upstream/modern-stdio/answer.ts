// What one request on a modern stdio child comes back as: the answer a 2026 server over HTTP
// would give [SHTTP], so the relay and the legacy face read it as they read an HTTP answer. A
// response that comes first is a JSON answer, with the status HTTP gives its error; a
// notification first (progress, a log line, a listen's acknowledgment) makes it an SSE stream
// of the request's notifications ending in its response, as the SDK's own HTTP handler does.

import type { JsonRpcMessage, JsonRpcResponse } from '../../jsonrpc.js';
import { AnswerBody, type ModernAnswer } from '../modern/index.js';
import { pinnedStatus } from '../../errors.js';

/** The status a 2026 server gives an error over HTTP [SHTTP]: 400 for the envelope's, 404 for an unknown method. */
export function statusOf(response: JsonRpcResponse): number {
  if (!('error' in response)) return 200;
  const code = response.error.code;
  return pinnedStatus(code) ?? 200;
}

/** The answer being written: JSON or SSE, decided by what the child sends first. */
export class AnswerWriter {
  private body: AnswerBody | undefined;
  private done = false;

  constructor(
    private readonly onDestroy: (err: Error | null) => void,
    private readonly resolve: (answer: ModernAnswer) => void,
  ) {}

  /** The answer was handed over: from now on a failure ends the body instead. */
  get started(): boolean {
    return this.body !== undefined;
  }

  get ended(): boolean {
    return this.done;
  }

  /** A notification of the request's own. */
  notify(n: JsonRpcMessage): void {
    if (this.done) return;
    this.start().push(event(n));
  }

  /** The request's response: the end of the answer. */
  respond(response: JsonRpcResponse): void {
    if (this.done) return;
    if (this.body === undefined) {
      const text = Buffer.from(JSON.stringify(response));
      this.done = true;
      this.body = new AnswerBody(() => undefined);
      this.body.push(text);
      this.body.push(null);
      const headers = { 'content-type': 'application/json', 'content-length': String(text.byteLength) };
      this.resolve({ statusCode: statusOf(response), headers, body: this.body });
      return;
    }
    this.body.push(event(response));
    this.end();
  }

  /** The stream ends with no response (a listen the child tore down). */
  end(): void {
    if (this.done) return;
    this.done = true;
    this.body?.push(null);
  }

  /** The request failed after its answer began: the body breaks, as a dropped HTTP stream would. */
  fail(err: Error): void {
    if (this.done) return;
    this.done = true;
    this.body?.destroy(err);
  }

  private start(): AnswerBody {
    if (this.body !== undefined) return this.body;
    this.body = new AnswerBody((err) => {
      if (!this.done) {
        this.done = true;
        this.onDestroy(err);
      }
    });
    this.resolve({ statusCode: 200, headers: { 'content-type': 'text/event-stream' }, body: this.body });
    return this.body;
  }
}

function event(m: JsonRpcMessage): Buffer {
  return Buffer.from(`event: message\ndata: ${JSON.stringify(m)}\n\n`);
}
