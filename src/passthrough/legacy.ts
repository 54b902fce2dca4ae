// Dual era: legacy clients (initialize, Mcp-Session-Id, GET streams, DELETE) are proxied to the
// upstream unchanged and streamed both ways without buffering. Hop-by-hop headers, and any
// named in Connection, are not forwarded [RFC 9110 §7.6.1].

import type { IncomingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Agent, request as undiciRequest } from 'undici';
import { sendCausewayError, type HttpResponse } from '../egress/index.js';
import { toCausewayError } from '../errors.js';
import { encodeHeaderValue } from '../envelope/headers.js';
import { isObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { toUpstreamError } from '../upstream/errors.js';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'http2-settings',
]);

export interface PassthroughOptions {
  url: string;
  headers: Readonly<Record<string, string>>;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
}

function forwardable(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): Record<string, string> {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || lower.startsWith(':') || HOP_BY_HOP.has(lower) || named.has(lower)) continue;
    out[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/**
 * Mcp-Method / Mcp-Name for a legacy POST, so a header-routing balancer between Causeway and the
 * servers can use them; what the client sent itself is kept.
 */
export function routingHeaders(headers: IncomingHttpHeaders, body: unknown): Record<string, string> {
  if (!isObject(body) || typeof body.method !== 'string') return {};
  const out: Record<string, string> = {};
  if (headers['mcp-method'] === undefined) out['mcp-method'] = encodeHeaderValue(body.method);
  const params = isObject(body.params) ? body.params : {};
  const name = body.method === 'resources/read' ? params.uri : body.method === 'tools/call' || body.method === 'prompts/get' ? params.name : undefined;
  if (typeof name === 'string' && headers['mcp-name'] === undefined) out['mcp-name'] = encodeHeaderValue(name);
  return out;
}

export class LegacyPassthrough {
  // Legacy GET streams live as long as the client wants: no body timeout here.
  private readonly agent: Agent;

  constructor(
    private readonly opts: PassthroughOptions,
    private readonly log: Logger,
  ) {
    this.agent = new Agent({
      connect: { timeout: opts.connectTimeoutMs },
      headersTimeout: opts.requestTimeoutMs,
      bodyTimeout: 0,
    });
  }

  async forward(
    method: string,
    headers: IncomingHttpHeaders,
    body: Buffer | undefined,
    res: HttpResponse,
    signal: AbortSignal,
    extraHeaders: Record<string, string> = {},
  ): Promise<void> {
    let upstream;
    try {
      upstream = await undiciRequest(this.opts.url, {
        method: method as 'GET' | 'POST' | 'DELETE',
        headers: { ...forwardable(headers), ...extraHeaders, ...this.opts.headers },
        body,
        dispatcher: this.agent,
        signal,
      });
    } catch (err) {
      if (signal.aborted) return;
      this.log.warn({ err: (err as Error).message }, 'legacy passthrough failed');
      sendCausewayError(res, toCausewayError(toUpstreamError(err)), null);
      return;
    }
    if (res.headersSent || res.destroyed) {
      upstream.body.destroy();
      return;
    }
    const out = forwardable(upstream.headers as Record<string, string | string[] | undefined>);
    res.writeHead(upstream.statusCode, out);
    (res as { flushHeaders?: () => void }).flushHeaders?.();
    try {
      await pipeline(upstream.body, res as NodeJS.WritableStream);
    } catch (err) {
      if (!signal.aborted) this.log.debug({ err: (err as Error).message }, 'legacy passthrough stream ended early');
      upstream.body.destroy();
      if (!res.writableEnded) res.destroy();
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  destroy(): void {
    void this.agent.destroy();
  }
}

