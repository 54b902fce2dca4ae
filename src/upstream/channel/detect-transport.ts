// `upstream.transport: auto`: which legacy HTTP transport an upstream URL speaks, found the way the
// spec's dual-era client falls back [SHTTP §Backward Compatibility]. POST `initialize` as
// Streamable HTTP; an answer, or any JSON-RPC error body, means Streamable HTTP. A 400, 404 or 405
// whose body is not JSON-RPC sends us to the deprecated HTTP+SSE transport: GET the URL itself, as
// the SDK clients fall back, then, for a URL ending in /mcp, the conventional /sse beside it (the
// SDK's dual-transport servers serve both), and expect `endpoint` as the first event. The result
// is kept per URL in a memo the caller owns, so each upstream is probed (and logged) once; a
// failed probe is not kept.

import { CausewayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import {
  discard,
  mediaType,
  httpRefusal,
  readErrorBody,
  refusalOf,
  DEFAULT_MAX_EVENT_BYTES,
  parseSse,
  type Dispatcher,
  type Response,
  UpstreamHttp,
} from '../http/index.js';
import { toUpstreamError } from '../core/index.js';
import { resolveEndpoint, withHeaders } from './sse-channel.js';

export type LegacyTransport = 'streamable-http' | 'sse';

/** The transport found, and the URL to speak it at (for sse, the SSE endpoint that answered). */
export interface Detected {
  transport: LegacyTransport;
  url: string;
}

/** What was found per URL, and probes under way (so concurrent callers share one). */
export class TransportMemo {
  private readonly known = new Map<string, Detected>();
  readonly pending = new Map<string, Promise<Detected>>();

  get(url: string): Detected | undefined {
    return this.known.get(url);
  }

  set(url: string, found: Detected): void {
    this.known.set(url, found);
  }

  /** Forgets a URL, so the next call probes again (after the upstream changed, say). */
  forget(url: string): void {
    this.known.delete(url);
  }
}

export interface DetectOptions {
  memo: TransportMemo;
  log: Logger;
  /** Configured `upstream.headers`, on both probes. */
  headers?: Record<string, string>;
  /** Bounds each probe. */
  timeoutMs: number;
  /** Bounds connecting, when no dispatcher is given; timeoutMs unless told. */
  connectTimeoutMs?: number;
  /** The upstream's composed client (or any undici Dispatcher); without one each probe makes its own. */
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
}

const PROBE_ID = 'causeway-transport-probe';
const LEGACY_SSE_STATUSES: ReadonlySet<number> = new Set([400, 404, 405]);

export async function detectTransport(url: string, options: DetectOptions): Promise<Detected> {
  const { memo } = options;
  const known = memo.get(url);
  if (known) return known;
  const under = memo.pending.get(url);
  if (under) return under;
  const probe = (async () => {
    const connectMs = options.connectTimeoutMs ?? options.timeoutMs;
    const own = options.dispatcher ? undefined : new UpstreamHttp({ connectTimeoutMs: connectMs });
    try {
      const found = await probeUrl(url, options, options.dispatcher ?? own!.dispatcher);
      memo.set(url, found);
      // The path only: a URL may carry credentials.
      options.log.info(
        { transport: found.transport, path: new URL(found.url).pathname },
        'upstream transport detected',
      );
      return found;
    } catch (err) {
      options.log.warn({ err }, 'upstream transport probe failed; the next caller probes again');
      throw err;
    } finally {
      memo.pending.delete(url);
      void own?.close();
    }
  })();
  memo.pending.set(url, probe);
  return probe;
}

function signalFor(options: DetectOptions): AbortSignal {
  const timeout = AbortSignal.timeout(Math.max(1, Math.ceil(options.timeoutMs)));
  return options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
}

/** Where an HTTP+SSE server may be: the URL itself, then /sse beside a URL ending in /mcp. */
function sseCandidates(url: string): string[] {
  const u = new URL(url);
  if (!u.pathname.endsWith('/mcp')) return [url];
  const beside = new URL(u);
  beside.pathname = `${u.pathname.slice(0, -'/mcp'.length)}/sse`;
  return [url, beside.href];
}

async function probeUrl(url: string, options: DetectOptions, dispatcher: Dispatcher): Promise<Detected> {
  const target = new URL(url);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: PROBE_ID,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'causeway-transport-probe', version: '1' },
    },
  });
  const res = await request(dispatcher, options, {
    origin: target.origin,
    path: `${target.pathname}${target.search}`,
    method: 'POST',
    headers: withHeaders(options.headers, {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    }),
    body,
  });
  if (res.statusCode >= 200 && res.statusCode <= 299) {
    void discard(res.body);
    // The probe opened a session on a stateful upstream: end it rather than leave it to expire.
    const sid = res.headers['mcp-session-id'];
    const sessionId = Array.isArray(sid) ? sid[0] : sid;
    if (sessionId !== undefined) void endProbeSession(dispatcher, options, target, sessionId);
    return { transport: 'streamable-http', url };
  }
  if (!LEGACY_SSE_STATUSES.has(res.statusCode)) throw await refusalOf(res);
  // A JSON-RPC error body (a modern -32022 or -32601, a legacy "no session") is a server that
  // speaks JSON-RPC over POST: Streamable HTTP, whatever it thought of the probe.
  if ((await readErrorBody(res)) !== undefined) return { transport: 'streamable-http', url };
  for (const sseUrl of sseCandidates(url)) {
    if (await isSseEndpoint(new URL(sseUrl), options, dispatcher)) return { transport: 'sse', url: sseUrl };
  }
  throw httpRefusal(res.statusCode, 'neither Streamable HTTP nor HTTP+SSE (no endpoint event)');
}

async function isSseEndpoint(sseUrl: URL, options: DetectOptions, dispatcher: Dispatcher): Promise<boolean> {
  const res = await request(dispatcher, options, {
    origin: sseUrl.origin,
    path: `${sseUrl.pathname}${sseUrl.search}`,
    method: 'GET',
    headers: withHeaders(options.headers, { accept: 'text/event-stream' }),
  });
  if (res.statusCode < 200 || res.statusCode > 299 || mediaType(res.headers['content-type']) !== 'text/event-stream') {
    void discard(res.body);
    return false;
  }
  // The GET opened an HTTP+SSE session: leaving the loop destroys the body, which ends it.
  try {
    for await (const ev of parseSse(res.body, { maxEventBytes: DEFAULT_MAX_EVENT_BYTES })) {
      if (ev.event !== 'endpoint') return false;
      resolveEndpoint(ev.data, sseUrl);
      return true;
    }
    return false;
  } catch {
    // No endpoint in time, an oversized event, a dropped stream: not an HTTP+SSE endpoint.
    return false;
  } finally {
    res.body.destroy();
  }
}

async function request(
  dispatcher: Dispatcher,
  options: DetectOptions,
  req: Omit<Dispatcher.RequestOptions, 'signal'>,
): Promise<Response> {
  const signal = signalFor(options);
  try {
    // The probe's own signal bounds it, not the client's timeouts.
    return await dispatcher.request({ ...req, signal, headersTimeout: 0, bodyTimeout: 0 });
  } catch (err) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (signal.aborted)
      throw new CausewayError(
        'upstream_timeout',
        `Upstream transport probe got no answer within ${options.timeoutMs} ms`,
        undefined,
        { cause: err },
      );
    throw toUpstreamError(err);
  }
}

async function endProbeSession(
  dispatcher: Dispatcher,
  options: DetectOptions,
  target: URL,
  sessionId: string,
): Promise<void> {
  try {
    const res = await dispatcher.request({
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: 'DELETE',
      headers: withHeaders(options.headers, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }),
      signal: signalFor(options),
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    await discard(res.body);
  } catch {
    // Best effort: the upstream expires the session on its own.
  }
}
