// Dual era: legacy clients (initialize, Mcp-Session-Id, GET streams, DELETE) are proxied to the
// upstream unchanged and streamed both ways without buffering. Hop-by-hop headers, and any
// named in Connection, are not forwarded [RFC 9110 §7.6.1].
//
// An upstream with several equivalent URLs: a new session goes to the next admitted one, and
// its Mcp-Session-Id is handed to the client as `<url index>.<id>` so later requests find it
// again. A session whose URL is ejected or unreachable is answered 404, which tells a legacy
// client to initialize again [L-TR] — and that lands on a live URL.

import type { IncomingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Agent, request as undiciRequest } from 'undici';
import { sendCausewayError, type HttpResponse } from '../egress/index.js';
import { causewayError, toCausewayError } from '../errors.js';
import { encodeHeaderValue } from '../envelope/headers.js';
import { isObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { toUpstreamError } from '../upstream/errors.js';
import { neverDelivered, type TargetSet } from '../upstream/targets.js';

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
  targets: TargetSet;
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
    const { targets } = this.opts;
    const spread = targets.size > 1;
    const sent = forwardable(headers);
    let target: string | undefined;
    const sessionId = sent['mcp-session-id'];
    if (spread && sessionId !== undefined) {
      const dot = sessionId.indexOf('.');
      target = dot > 0 ? targets.at(Number(sessionId.slice(0, dot))) : undefined;
      if (target === undefined || !targets.admits(target)) return sessionGone(res);
      sent['mcp-session-id'] = sessionId.slice(dot + 1);
    }
    const tried = new Set<string>();
    let upstream;
    for (;;) {
      const url = target ?? targets.pick(tried);
      tried.add(url);
      try {
        upstream = await undiciRequest(url, {
          method: method as 'GET' | 'POST' | 'DELETE',
          headers: { ...sent, ...extraHeaders, ...this.opts.headers },
          body,
          dispatcher: this.agent,
          signal,
        });
        targets.succeeded(url);
        target = url;
        break;
      } catch (err) {
        if (signal.aborted) return;
        if (neverDelivered(err)) {
          targets.failed(url);
          // A new session may go to another URL; an existing one lives where it lives.
          if (target === undefined && tried.size < targets.size) continue;
          if (target !== undefined && spread) return sessionGone(res);
        }
        this.log.warn({ err: (err as Error).message }, 'legacy passthrough failed');
        sendCausewayError(res, toCausewayError(toUpstreamError(err)), null);
        return;
      }
    }
    if (res.headersSent || res.destroyed) {
      upstream.body.destroy();
      return;
    }
    const out = forwardable(upstream.headers as Record<string, string | string[] | undefined>);
    if (spread && out['mcp-session-id'] !== undefined) out['mcp-session-id'] = `${targets.indexOf(target)}.${out['mcp-session-id']}`;
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

/** 404 to a request on a session: a legacy client then starts a new one [L-TR]. */
function sessionGone(res: HttpResponse): void {
  sendCausewayError(res, causewayError('not_found', 'Session not found'), null);
}
