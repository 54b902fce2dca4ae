// The client of a 2026-07-28 upstream: stateless, one HTTP request per JSON-RPC request, sent
// through the upstream's dispatcher (its URLs, credentials and timeouts), or one exchange on a
// stdio child's channel (modern-stdio/), answered as HTTP would answer it. `post` hands back the
// upstream's answer as it is, for a modern client's request passed through byte for byte;
// `request` reads the answer (JSON, or an SSE stream of the request's notifications ending in
// its response) for a request Causeway makes itself, as the legacy face over this upstream
// does. Closing the stream is the cancellation [SHTTP]: an aborted signal ends the request.

import { causewayError } from '../../errors.js';
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId } from '../../jsonrpc.js';
import { callHeaders } from '../core/index.js';
import {
  checkContentLength,
  decodeMessages,
  discard,
  finish,
  LONG_LIVED,
  mediaType,
  readText,
  refusalOf,
  sseMessages,
  type ResponseBody,
  type UpstreamDispatcher,
} from '../http/index.js';
import { MODERN_VERSION, probeRequest, type ProbeAnswer } from './era.js';

export interface ModernCallOptions {
  /** Headers of the client's request this upstream may get (ForwardPolicy), and any others. */
  headers?: Record<string, string>;
  /** The principal hash whose upstream credential the request carries. */
  principal?: string;
  signal: AbortSignal;
  /** A subscriptions/listen: no body timeout. */
  longLived?: boolean;
  /** One of the upstream's URLs (the era probe asks each); the first when not given. */
  target?: string;
}

export interface ModernRequestOptions extends ModernCallOptions {
  /** The request's progress and log notifications, in order. */
  onNotification?(n: JsonRpcNotification): void;
}

/** An upstream's answer as HTTP gives it: status, headers (content-type: JSON or SSE) and body. */
export interface ModernAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: ResponseBody;
  /** An HTTP answer's request, as undici hands it back: where it went, for a refusal's words. */
  opaque?: unknown;
}

/** How a request's bytes reach a modern upstream: over HTTP (httpWire), or a stdio child's channel. */
export interface ModernWire {
  post(
    body: string | Uint8Array,
    method: string,
    name: string | undefined,
    opts: ModernCallOptions,
  ): Promise<ModernAnswer>;
}

/**
 * The wire of an upstream reached over HTTP: one POST through its dispatcher per request, with
 * the client's forwarded headers, the operator's configured ones over them (upstream.headers, as
 * on the legacy side), and the protocol's own over both.
 */
export function httpWire(dispatcher: UpstreamDispatcher): ModernWire {
  return {
    post(body, method, name, opts) {
      const headers = { ...dispatcher.headers('post', undefined, opts.headers), ...callHeaders(method, name) };
      headers['mcp-protocol-version'] = MODERN_VERSION;
      const to = { target: opts.target, principal: opts.principal };
      return dispatcher.send('POST', to, headers, body, opts.signal, opts.longLived ? LONG_LIVED : 0);
    },
  };
}

export class ModernClient {
  constructor(
    private readonly wire: ModernWire,
    private readonly maxResponseBytes: number,
  ) {}

  /** Sends a request's bytes; the answer is the caller's to read or relay. */
  post(
    body: string | Uint8Array,
    method: string,
    name: string | undefined,
    opts: ModernCallOptions,
  ): Promise<ModernAnswer> {
    return this.wire.post(body, method, name, opts);
  }

  /** Sends one request and reads its answer: the JSON-RPC response, an error response included. */
  async request(
    msg: JsonRpcRequest,
    name: string | undefined,
    opts: ModernRequestOptions,
  ): Promise<{ status: number; response: JsonRpcResponse }> {
    const res = await this.post(JSON.stringify(msg), msg.method, name, opts);
    const type = mediaType(res.headers['content-type']);
    if (type === 'text/event-stream')
      return { status: res.statusCode, response: await this.readStream(res, msg.id, opts) };
    if (type !== 'application/json') {
      if (res.statusCode >= 300) throw await refusalOf(res);
      void discard(res.body);
      throw causewayError('upstream_bad_response', `Upstream answered ${type || 'no content type'} to ${msg.method}`);
    }
    checkContentLength(res.body, res.headers['content-length'], this.maxResponseBytes);
    const [m] = decodeMessages(await readText(res.body, this.maxResponseBytes));
    if (m?.kind !== 'response')
      throw causewayError('upstream_bad_response', `Upstream answered ${msg.method} with no response`);
    return { status: res.statusCode, response: m.message };
  }

  /** server/discover with nothing declared, read for its era (era.ts). */
  async probe(
    signal: AbortSignal,
    clientInfo: { name: string; version: string },
    target?: string,
  ): Promise<ProbeAnswer> {
    const msg = probeRequest(clientInfo);
    const res = await this.post(JSON.stringify(msg), msg.method, undefined, { signal, ...(target ? { target } : {}) });
    let message: unknown;
    try {
      const type = mediaType(res.headers['content-type']);
      if (type === 'application/json') message = decodeMessages(await readText(res.body, 1024 * 1024))[0]?.message;
      else if (type === 'text/event-stream') message = await this.readStream(res, msg.id, { signal });
      else void discard(res.body);
    } catch {
      message = undefined;
    }
    return { status: res.statusCode, message };
  }

  private async readStream(res: ModernAnswer, id: RequestId, opts: ModernRequestOptions): Promise<JsonRpcResponse> {
    for await (const messages of sseMessages(res.body, this.maxResponseBytes)) {
      for (const m of messages) {
        if (m.kind === 'notification') opts.onNotification?.(m.message);
        else if (m.kind === 'response' && m.message.id === id) {
          // The stream ends with its response; the rest (normally nothing) is read in the background.
          finish(res.body);
          return m.message;
        }
        // A 2026 stream carries no requests [SHTTP]: one is left out.
      }
    }
    throw causewayError('upstream_bad_response', 'The upstream ended the stream before its response');
  }
}
