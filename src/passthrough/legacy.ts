// Dual era: legacy clients (initialize, Mcp-Session-Id, GET streams, DELETE) are proxied to the
// upstream unchanged and streamed both ways without buffering. Upstream go the protocol's own
// headers and those the upstream's forward policy allows; back come the upstream's, less the
// hop-by-hop ones and any named in Connection [RFC 9110 §7.6.1]. With principals, a session id
// is bound to the principal that opened it (see session-binding.ts). The one exception to the
// streaming: a list answer the token may not see whole is read and filtered (list-answers.ts).
//
// An upstream with several equivalent URLs: a new session goes to the next admitted one, and
// its Mcp-Session-Id is handed to the client as `<url index>.<id>` so later requests find it
// again. A session whose URL is ejected or unreachable is answered 404, which tells a legacy
// client to initialize again [L-TR] — and that lands on a live URL. So is a session the upstream
// refuses with a 400 that says it no longer knows it (upstream/core/lost-session.ts), as servers
// built on the legacy SDK's session-map example do after a restart: a client takes only a 404 as
// the sign to start again.
//
// Requests go through the upstream's composed client (upstream/http/compose/), shared with its
// session client: it picks the URL and fails over, keeps the URLs' health, and sends the
// upstream's own credential with its one 401 retry.

import type { IncomingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { sendCausewayError, type HttpResponse } from '../egress/index.js';
import { CausewayError, toCausewayError } from '../errors.js';
import { callName, encodeHeaderValue } from '../envelope/index.js';
import { isObject, isRequestId, type JsonObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import {
  HOP_BY_HOP,
  losesSession,
  readRefusal,
  REFUSAL_BODY_LIMIT,
  TargetUnreachableError,
  toUpstreamError,
  type ForwardPolicy,
  type Response,
  type TargetSet,
  type UpstreamHttp,
  type UpstreamRequest,
} from '../upstream/index.js';
import { sessionGone, type LegacyBody, type LegacyFace, type LegacyRequest } from './legacy-face.js';
import { listRequests, relayFiltered } from './list-answers.js';
import type { SessionBinding } from './session-binding.js';

export interface PassthroughOptions {
  targets: TargetSet;
  /**
   * The upstream's composed client, with its credential (sent instead of anything the client has); its owner closes it.
   */
  http: UpstreamHttp;
  headers: Readonly<Record<string, string>>;
  /** The client headers this upstream gets besides the protocol's own. */
  forward: ForwardPolicy;
  /** Binds handed-out session ids to their principal; undefined when neither principal.mode nor auth.mode is set. */
  binding: SessionBinding | undefined;
  /** The most of a list answer read to filter it. */
  maxResponseBytes: number;
}

/** Headers of the legacy Streamable HTTP protocol itself, always passed on [L-TR]. */
const PROTOCOL_HEADERS = [
  'accept',
  'content-type',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'mcp-method',
  'mcp-name',
];
const PARAM_HEADER_PREFIX = 'mcp-param-';

function requestHeaders(headers: IncomingHttpHeaders, forward: ForwardPolicy): Record<string, string> {
  const out = forward.pick(headers);
  for (const name of PROTOCOL_HEADERS) {
    const v = headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  for (const [name, v] of Object.entries(headers))
    if (name.startsWith(PARAM_HEADER_PREFIX) && typeof v === 'string') out[name] = v;
  return out;
}

/** An upstream answer's headers without the hop-by-hop ones and those its Connection names. */
function responseHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
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
  const name = legacyName(body);
  if (name !== undefined && headers['mcp-name'] === undefined) out['mcp-name'] = encodeHeaderValue(name);
  return out;
}

/** What a legacy message names, as Mcp-Name would: the tool or prompt, the resource URI or the task. */
export function legacyName(message: JsonObject): string | undefined {
  return typeof message.method === 'string' ? callName(message.method, message.params) : undefined;
}

export class LegacyPassthrough implements LegacyFace {
  constructor(
    private readonly opts: PassthroughOptions,
    private readonly log: Logger,
  ) {}

  async forward(asked: LegacyRequest): Promise<void> {
    const { method, headers, body, res, signal, access, principal: asking } = asked;
    const extraHeaders = asked.extraHeaders ?? {};
    const { targets, binding } = this.opts;
    const spread = targets.size > 1;
    const sent = requestHeaders(headers, this.opts.forward);
    const lists = listRequests(access, body?.json);
    // A list to filter is read here: not compressed.
    if (lists) delete sent['accept-encoding'];
    // No binding: principal.mode and auth.mode are none, and no principal is told apart.
    const principal = binding ? asking : undefined;
    let target: string | undefined;
    let sessionId = sent['mcp-session-id'];
    if (binding && sessionId !== undefined) {
      sessionId = binding.open(sessionId, principal!);
      if (sessionId === undefined) return sessionGone(res, null);
      sent['mcp-session-id'] = sessionId;
    }
    if (spread && sessionId !== undefined) {
      const dot = sessionId.indexOf('.');
      target = dot > 0 ? targets.at(Number(sessionId.slice(0, dot))) : undefined;
      if (target === undefined || !targets.admits(target)) return sessionGone(res, null);
      sent['mcp-session-id'] = sessionId.slice(dot + 1);
    }
    // Legacy GET streams live as long as the client wants: no body timeout here. Without a
    // target the client picks the URL, and sets `target` to the one that answered.
    const req: UpstreamRequest = {
      method: method as 'GET' | 'POST' | 'DELETE',
      headers: { ...sent, ...extraHeaders, ...this.opts.headers },
      body: body?.bytes,
      signal,
      bodyTimeout: 0,
      target,
      failover: target === undefined,
      principal,
      movable: true,
    };
    let upstream: Response;
    try {
      upstream = await this.opts.http.request(req);
    } catch (err) {
      if (signal.aborted) return;
      let cause = err;
      if (err instanceof TargetUnreachableError) {
        // An existing session lives where it lives; a new one found no URL that answered.
        if (req.target !== undefined && spread) return sessionGone(res, null);
        cause = err.cause;
      }
      // The credential's own errors (the user has to sign in) are answers, not failures.
      if (!(cause instanceof CausewayError))
        this.log.warn({ err: (cause as Error).message }, 'legacy passthrough failed');
      sendCausewayError(res, toCausewayError(toUpstreamError(cause)), null);
      return;
    }
    if (res.headersSent || res.destroyed) {
      upstream.body.destroy();
      return;
    }
    if (upstream.statusCode === 400 && sessionId !== undefined) return this.refusedOnSession(upstream, body, res);
    const out = responseHeaders(upstream.headers as Record<string, string | string[] | undefined>);
    if (spread && out['mcp-session-id'] !== undefined)
      out['mcp-session-id'] = `${targets.indexOf(req.target)}.${out['mcp-session-id']}`;
    if (binding && out['mcp-session-id'] !== undefined)
      out['mcp-session-id'] = binding.bind(out['mcp-session-id'], principal!);
    if (lists && upstream.statusCode === 200)
      return relayFiltered({
        body: upstream.body,
        headers: out,
        res,
        lists,
        access: access!,
        maxBytes: this.opts.maxResponseBytes,
      });
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

  /**
   * A 400 on the client's session: when it says the upstream lost the session, the client is
   * answered 404 and starts again; else the refusal, read to tell, is relayed as it came.
   */
  private async refusedOnSession(upstream: Response, body: LegacyBody | undefined, res: HttpResponse): Promise<void> {
    const message = body?.json;
    const rawId = isObject(message) ? message.id : undefined;
    const id = isRequestId(rawId) ? rawId : undefined;
    const text = await readRefusal(upstream.body, REFUSAL_BODY_LIMIT);
    if (res.headersSent || res.destroyed) return;
    if (losesSession(400, text, id)) {
      this.log.info({ status: 400 }, 'upstream no longer knows a legacy client session; answered 404 to start again');
      return sessionGone(res, id ?? null);
    }
    const out = responseHeaders(upstream.headers as Record<string, string | string[] | undefined>);
    delete out['content-length'];
    res.writeHead(400, out);
    res.end(text ?? '');
  }

  /** The upstream's client is its owner's to close: nothing of the passthrough's own to let go of. */
  async close(): Promise<void> {}
}
