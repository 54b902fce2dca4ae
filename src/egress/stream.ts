// Request-scoped SSE [SHTTP]: this request's progress and log notifications, then its final
// response, then the end of the stream. No event ids: 2026-07-28 has no resumability.

import type { JsonRpcMessage } from '../jsonrpc.js';
import type { ServerResponse } from 'node:http';
import type { HttpResponse } from './reply.js';

export class SseStream {
  private started = false;

  constructor(private readonly res: HttpResponse) {}

  get open(): boolean {
    return !this.res.writableEnded && !this.res.destroyed;
  }

  start(): void {
    if (this.started || this.res.headersSent) return;
    this.started = true;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    });
    // Push headers now so the client sees the stream before the first event.
    (this.res as { flushHeaders?: () => void }).flushHeaders?.();
  }

  send(message: JsonRpcMessage | object): void {
    if (!this.open) return;
    this.start();
    this.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  comment(text = 'keep-alive'): void {
    if (!this.open) return;
    this.start();
    this.write(`: ${text}\n\n`);
  }

  private write(text: string): void {
    (this.res as ServerResponse).write(text);
  }

  end(final?: JsonRpcMessage | object): void {
    if (final) this.send(final);
    if (this.open) {
      this.start();
      this.res.end();
    }
  }
}
