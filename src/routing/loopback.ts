// A mount's own 2026-07-28 face as a wire (ModernWire), for the legacy face over a federated
// mount: each request the translated face would send an upstream is served in process by the
// mount's modern pipeline (merged discover and lists, routed calls, input_required rounds from
// any member, listen), and its answer comes back as an upstream's HTTP answer would, JSON or SSE.
// The request is classified as the front door classifies a modern POST, so it gets the same
// checks and errors; what the pipeline writes to its response is the answer's status, headers
// and body. Closing the body (or the caller's signal) ends the request, as a client going away.

import { EventEmitter } from 'node:events';
import { ANONYMOUS } from '../auth/index.js';
import { classifyPost, type HeaderBag } from '../envelope/index.js';
import { sendCausewayError, type HttpResponse } from '../egress/index.js';
import { causewayError, toCausewayError } from '../errors.js';
import { isObject, isRequestId } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { AnswerBody, callHeaders, MODERN_VERSION, type ModernAnswer, type ModernWire } from '../upstream/index.js';
import type { ModernExchange } from './exchange.js';

/** What a response of the pipeline's is written to: the answer handed back once its head is. */
class LoopbackResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  destroyed = false;
  readonly body: AnswerBody;

  constructor(
    private readonly onHead: (answer: ModernAnswer) => void,
    onGone: () => void,
  ) {
    super();
    this.body = new AnswerBody(() => {
      if (!this.writableEnded) {
        this.destroyed = true;
        onGone();
      }
    });
  }

  writeHead(status: number, headers: Record<string, string | number> = {}): this {
    if (this.headersSent) return this;
    this.statusCode = status;
    this.headersSent = true;
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) h[k.toLowerCase()] = String(v);
    this.onHead({ statusCode: status, headers: h, body: this.body });
    return this;
  }

  setHeader(): this {
    return this;
  }

  flushHeaders(): void {}

  write(chunk: string | Uint8Array): boolean {
    if (this.writableEnded || this.destroyed) return false;
    if (!this.headersSent) this.writeHead(this.statusCode);
    this.body.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    return true;
  }

  end(chunk?: string | Uint8Array): this {
    if (this.writableEnded) return this;
    if (chunk !== undefined) this.write(chunk);
    else if (!this.headersSent) this.writeHead(this.statusCode);
    this.writableEnded = true;
    this.body.push(null);
    this.emit('finish');
    this.emit('close');
    return this;
  }
}

/**
 * The wire whose requests `serve` answers: the mount's modern face. `principal` is the caller's
 * (the legacy client's principal hash): the members' sessions and credentials are its own.
 */
export function loopbackWire(serve: (ex: ModernExchange) => Promise<void>, log: Logger): ModernWire {
  return {
    post(body, method, name, opts) {
      return new Promise<ModernAnswer>((resolve, reject) => {
        const gone = new AbortController();
        const signal = AbortSignal.any([opts.signal, gone.signal]);
        const res = new LoopbackResponse(resolve, () => gone.abort(new Error('the answer was closed')));
        const http = res as unknown as HttpResponse;
        const headers: Record<string, string> = {
          ...callHeaders(method, name, opts.headers),
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MODERN_VERSION,
        };
        // The client's own Mcp-Name (a legacy client's, if it sent one) never speaks for this request.
        if (name === undefined) delete headers['mcp-name'];
        let json: unknown;
        let parseError = false;
        try {
          json = JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'));
        } catch {
          parseError = true;
        }
        const verdict = classifyPost({ headers: headers as HeaderBag, body: json, parseError });
        if (verdict.era !== 'modern') {
          const id = isObject(json) && isRequestId(json.id) ? json.id : null;
          const { reason, message, data } =
            verdict.era === 'reject'
              ? verdict.rejection
              : { reason: 'invalid_request' as const, message: 'Not a 2026-07-28 request', data: undefined };
          sendCausewayError(http, causewayError(reason, message, data), id);
          return;
        }
        const { request } = verdict;
        const ex: ModernExchange = { request, headers, res: http, signal, log, principal: opts.principal ?? ANONYMOUS };
        serve(ex).then(
          () => {
            if (!res.headersSent) reject(causewayError('upstream_bad_response', `${method} was answered with nothing`));
            else if (!res.writableEnded) res.end();
          },
          (err: unknown) => {
            if (!res.headersSent) sendCausewayError(http, toCausewayError(err), request.id);
            else res.body.destroy(err instanceof Error ? err : new Error(String(err)));
          },
        );
      });
    },
  };
}
