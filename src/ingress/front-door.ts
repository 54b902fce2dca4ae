// The request handler behind the ingress: probes (/healthz, /readyz; /metrics is on the admin
// port only) and the resource metadata, drain and load shedding, the mount the path names,
// Host/Origin, the access token, HTTP method, body limits, then the classifier's verdict and
// the token's scopes for it: the mount's legacy face, a modern request for the mount, or the
// spec's error. Nothing thrown here reaches the client as a stack trace.

import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { constants as h2constants, type Http2ServerRequest } from 'node:http2';
import { sendCausewayError, sendJson, sendStatus, type HttpResponse } from '../egress/index.js';
import {
  checkOrigin,
  classifyPost,
  isValidAuthority,
  LEGACY_METHODS,
  META_VERSION,
  revisionLabel,
  type HeaderBag,
  type OriginPolicy,
} from '../envelope/index.js';
import { causewayError, toCausewayError, ERROR_TABLE, type CausewayError } from '../errors.js';
import { principalHash, WELL_KNOWN_PRM, type Access, type PrincipalPolicy, type ResourceServer } from '../auth/index.js';
import { isObject, type JsonObject, type RequestId } from '../jsonrpc.js';
import { inRequestLog, requestLogger, type Logger } from '../log.js';
import { legacyName, routingHeaders } from '../passthrough/index.js';
import { serveModern } from '../pipeline.js';
import type { AccessNotes, Mount } from '../routing/index.js';
import type { JsonLimits } from './json-limits.js';
import type { RateLimiter } from './rate-limit.js';
import { parseJson, readBody, type BodyLimits } from './read-body.js';
import type { IngressHandler, IngressRequest } from './server.js';

export interface FrontDoorDeps {
  /** Mount path -> what it serves. */
  mounts: ReadonlyMap<string, Mount>;
  maxHeaderBytes: number;
  maxInFlight: number;
  body: BodyLimits;
  json: JsonLimits;
  origin: OriginPolicy;
  /** Checks every MCP request's access token; undefined when auth.mode is none. */
  auth: ResourceServer | undefined;
  /** Causeway's OAuth callback for users signing in at an upstream; undefined when none has them. */
  signIn: SignInEndpoint | undefined;
  /** How a request's principal is hashed when no resource server checked it. */
  principal: PrincipalPolicy;
  /** Per-principal request rate; undefined when limits.ratePerSecond is 0. */
  rate: RateLimiter | undefined;
  log: Logger;
  /** Answers /readyz: false while draining or before the store is usable. */
  ready(): boolean;
  /** True once the listener is closed: every HTTP/1.1 answer then closes its connection. */
  closing(): boolean;
  /** Called once per MCP request when its response ends. */
  observe(sample: RequestSample): void;
  /** Share of MCP requests given an access log line (log.accessSample). */
  accessSample: number;
  inFlight: { count: number };
}

export interface SignInEndpoint {
  path: string;
  handle(query: URLSearchParams): Promise<{ status: number; text: string }>;
  /** Causeway's Client ID Metadata Document, fetched by authorization servers. */
  client: { path: string; document: Record<string, unknown> } | undefined;
}

/** What a request was, in bounded label values, for metrics. */
export interface RequestSample {
  era: 'modern' | 'legacy' | 'rejected';
  /** A method of the modern registry, a legacy method name for passthrough, or 'none'. */
  method: string;
  /** The protocol revision the client stated (_meta, initialize or MCP-Protocol-Version), bounded. */
  revision: string;
  status: number;
  seconds: number;
}

function headerBag(headers: IncomingHttpHeaders): HeaderBag {
  const bag: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined && !k.startsWith(':')) bag[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return bag;
}

function headerBytes(req: IngressRequest): number {
  let n = 0;
  const raw = req.rawHeaders;
  for (const h of raw) n += h.length + 2;
  return n;
}

function pathOf(req: IngressRequest): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q >= 0 ? url.slice(0, q) : url;
}

/** A user's browser back from an upstream's authorization server: a plain page saying how it went. */
async function signInAnswer(req: IngressRequest, res: HttpResponse, endpoint: SignInEndpoint, log: Logger): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  let answer: { status: number; text: string };
  try {
    answer = await endpoint.handle(new URLSearchParams(q >= 0 ? url.slice(q + 1) : ''));
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'sign-in callback failed');
    answer = { status: 502, text: (err as Error).message };
  }
  // The URL held a code and a state: no referrer leaves this page, and nothing caches it.
  res.writeHead(answer.status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
  res.end(`${answer.text}\n`);
}

export function frontDoor(deps: FrontDoorDeps): IngressHandler {
  return (req, res) => {
    const reqId = typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'].slice(0, 128) : randomUUID();
    const log = requestLogger(deps.log, { reqId });
    res.setHeader('x-request-id', reqId);
    inRequestLog(deps.log, reqId, () => handle(req, res, deps, log)).catch((err: unknown) => {
      log.error({ err }, 'unhandled error at the front door');
      sendCausewayError(res, toCausewayError(err), null);
    });
  };
}

async function handle(req: IngressRequest, res: HttpResponse, deps: FrontDoorDeps, log: Logger): Promise<void> {
  const path = pathOf(req);
  const method = req.method ?? 'GET';
  if (method === 'GET' && path === '/healthz') return sendJson(res, 200, { status: 'ok' });
  if (method === 'GET' && path === '/readyz') {
    const ready = deps.ready();
    return sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' });
  }
  // Public, whatever the request carries: it is how a client finds out where to get a token [RFC 9728 §3].
  if (deps.auth && method === 'GET' && path.startsWith(WELL_KNOWN_PRM)) {
    const doc = deps.auth.metadata(path);
    if (doc) return sendJson(res, 200, doc, { 'cache-control': 'max-age=300' });
  }
  if (deps.signIn && method === 'GET' && path === deps.signIn.path) return signInAnswer(req, res, deps.signIn, log);
  if (deps.signIn?.client && method === 'GET' && path === deps.signIn.client.path) return sendJson(res, 200, deps.signIn.client.document, { 'cache-control': 'max-age=300' });
  // Served as usual, but the client must take its next request elsewhere (HTTP/2 sessions got GOAWAY).
  if (deps.closing() && 'httpVersionMajor' in req && req.httpVersionMajor === 1) res.setHeader('connection', 'close');
  const mount = deps.mounts.get(path);
  if (mount === undefined) {
    closeAfterReply(req, res);
    return sendCausewayError(res, causewayError('not_found'), null);
  }
  if (headerBytes(req) > deps.maxHeaderBytes) {
    closeAfterReply(req, res);
    return sendStatus(res, 431);
  }
  const host = authorityOf(req);
  if (host === undefined) {
    closeAfterReply(req, res);
    return sendCausewayError(res, causewayError('bad_host'), null);
  }
  const headers = headerBag(req.headers);
  const originCheck = checkOrigin(deps.origin, host, headers.origin);
  if (!originCheck.ok) {
    closeAfterReply(req, res);
    return sendCausewayError(res, causewayError(originCheck.reason), null);
  }

  if (deps.inFlight.count >= deps.maxInFlight) {
    closeAfterReply(req, res);
    return sendCausewayError(res, causewayError('overloaded'), null);
  }
  deps.inFlight.count++;
  const abort = new AbortController();
  const started = performance.now();
  const tag: Tag = { era: 'rejected', method: 'none', revision: 'none', notes: {} };
  const onClose = () => {
    if (!res.writableFinished) abort.abort();
    const seconds = (performance.now() - started) / 1000;
    deps.observe({ ...tag, status: res.statusCode, seconds });
    if (deps.accessSample > 0 && (deps.accessSample >= 1 || Math.random() < deps.accessSample)) {
      log.info(
        {
          era: tag.era,
          method: tag.method,
          name: tag.name?.slice(0, 256),
          status: res.statusCode,
          ms: Math.round(seconds * 1e4) / 10,
          finished: res.writableFinished,
          ...tag.notes,
          ...(tag.notes.traceId === undefined ? traceIdOf(headers.traceparent) : {}),
        },
        'request',
      );
    }
  };
  res.on('close', onClose);
  try {
    await dispatch(req, res, method, headers, mount, deps, log, abort.signal, tag);
  } finally {
    deps.inFlight.count--;
  }
}

/**
 * A request refused before its body was read to the end must not have the rest read: close the
 * HTTP/1.1 connection after the reply, or reset the h2 stream with NO_ERROR once the reply is sent
 * [RFC 9113 §8.1]. Otherwise the discarded body is read without bound. No-op when there is no body.
 */
function closeAfterReply(req: IngressRequest, res: HttpResponse): void {
  if (!bodyPending(req)) return;
  if (req.httpVersionMajor >= 2) {
    // The stream's own 'finish' (reply sent): the compat response's fires only once the stream closes.
    const stream = (req as Http2ServerRequest).stream;
    stream.once('finish', () => {
      if (!stream.closed) stream.close(h2constants.NGHTTP2_NO_ERROR);
    });
  } else if (!res.headersSent) res.setHeader('connection', 'close');
}

function bodyPending(req: IngressRequest): boolean {
  if (req.complete || req.readableEnded) return false;
  if (req.httpVersionMajor >= 2) return !(req as Http2ServerRequest).stream.endAfterHeaders;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length.trim() !== '0');
}

/**
 * `name`: the tool, prompt or resource a modern request names; `notes`: what the later stages
 * add. Both for the access log only (not metric labels); the name is cut to 256 characters there.
 */
type Tag = Pick<RequestSample, 'era' | 'method' | 'revision'> & { name?: string; notes: AccessNotes };

/** The trace id of a W3C traceparent header, for the access log of a request no span recorded. */
function traceIdOf(traceparent: string | undefined): { traceId?: string } {
  const m = traceparent === undefined ? null : /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}/.exec(traceparent.trim());
  return m ? { traceId: m[1] } : {};
}

/** Bounded: a known legacy method, 'notification', 'response' or 'other'. */
function legacyMethodLabel(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'other';
  const m = (body as { method?: unknown; id?: unknown }).method;
  if (typeof m !== 'string') return 'response';
  if (m.startsWith('notifications/')) return 'notification';
  return LEGACY_METHODS.has(m) ? m : 'other';
}

/**
 * The revision a client spoke, read without trusting it: the modern `_meta` protocolVersion, an
 * initialize's protocolVersion, else the MCP-Protocol-Version header (absent on 2025-03-26 and older).
 */
function clientRevision(headers: HeaderBag, body: unknown): string {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const { method, params } = body as { method?: unknown; params?: unknown };
    if (typeof params === 'object' && params !== null) {
      const meta = (params as { _meta?: unknown })._meta;
      if (typeof meta === 'object' && meta !== null && META_VERSION in meta) return revisionLabel((meta as Record<string, unknown>)[META_VERSION]);
      if (method === 'initialize') return revisionLabel((params as { protocolVersion?: unknown }).protocolVersion);
    }
  }
  return revisionLabel(headers['mcp-protocol-version']?.trim());
}

/** Legacy clients on a federated mount: there is no one upstream session to give them. */
function legacyNotServed() {
  return causewayError('invalid_request', 'Legacy clients are served on single-upstream mounts only');
}

/**
 * The request's authority: exactly one Host header (HTTP/1.1), or :authority and any Host agreeing
 * (HTTP/2) [RFC 9112 §3.2, RFC 9113 §8.3.1], a valid host[:port]; undefined otherwise.
 */
function authorityOf(req: IngressRequest): string | undefined {
  const raw = req.rawHeaders;
  let host: string | undefined;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') {
      host = raw[i + 1];
      count++;
    }
  }
  if (count > 1) return undefined;
  if (req.httpVersionMajor >= 2) {
    const authority = req.headers[':authority'];
    if (typeof authority === 'string' && authority !== '') {
      if (host !== undefined && host !== authority) return undefined;
      host = authority;
    }
  }
  return host !== undefined && isValidAuthority(host) ? host : undefined;
}

async function dispatch(
  req: IngressRequest,
  res: HttpResponse,
  method: string,
  headers: HeaderBag,
  mount: Mount,
  deps: Pick<FrontDoorDeps, 'body' | 'json' | 'auth' | 'principal' | 'rate'>,
  log: Logger,
  signal: AbortSignal,
  tag: Tag,
): Promise<void> {
  const { body: bodyLimits, json: jsonLimits, auth } = deps;
  const passthrough = mount.passthrough;
  tag.revision = revisionLabel(headers['mcp-protocol-version']?.trim());
  // Every era's every method carries the token, checked before the body is read [AUTH].
  let access: Access | undefined;
  let principal: string | undefined;
  // With auth.publicDiscover, a tokenless server/discover is let through to the classifier, which must agree.
  const openDiscover = auth?.publicDiscover === true && method === 'POST' && headers.authorization === undefined && headers['mcp-method'] === 'server/discover';
  if (auth && !openDiscover && (method === 'POST' || method === 'GET' || method === 'DELETE')) {
    const verdict = await auth.authenticate(headers, mount.path, method);
    if (!verdict.ok) {
      log.debug({ reason: verdict.failure }, 'access token refused');
      closeAfterReply(req, res);
      return sendCausewayError(res, verdict.error, null);
    }
    access = verdict.access;
    principal = verdict.principal;
    const nonce = auth.nonceFor(access);
    if (nonce !== undefined) res.setHeader('dpop-nonce', nonce);
  }
  // Hashed once, here or by the resource server: every later stage reads it.
  principal ??= principalHash(deps.principal, headers);
  if (deps.rate && (method === 'POST' || method === 'GET' || method === 'DELETE')) {
    const refused = await deps.rate.refuse(principal);
    if (refused) {
      closeAfterReply(req, res);
      return sendCausewayError(res, refused, null);
    }
  }
  if (method === 'GET' || method === 'DELETE') {
    if (headers['mcp-session-id'] === undefined) {
      return sendCausewayError(res, causewayError('method_not_allowed', `${method} needs a legacy Mcp-Session-Id`), null);
    }
    tag.era = 'legacy';
    tag.method = method === 'GET' ? 'stream' : 'terminate';
    if (!passthrough) return sendCausewayError(res, legacyNotServed(), null);
    return passthrough.forward(method, req.headers, undefined, res, signal, undefined, access, principal);
  }
  if (method !== 'POST') {
    closeAfterReply(req, res);
    return sendCausewayError(res, causewayError('method_not_allowed'), null);
  }

  const contentType = headers['content-type'];
  if (contentType !== undefined && !/^application\/json\b/i.test(contentType.trim())) {
    req.resume();
    closeAfterReply(req, res);
    return sendCausewayError(res, causewayError('unsupported_media_type'), null);
  }
  let body: Buffer;
  try {
    body = await readBody(req, bodyLimits);
  } catch (err) {
    if (signal.aborted) return;
    closeAfterReply(req, res);
    return sendCausewayError(res, toCausewayError(err), null);
  }
  const parsed = parseJson(body, jsonLimits);
  if ('exceeded' in parsed) {
    log.debug({ exceeded: parsed.exceeded }, 'request body over the JSON limits');
    const message = parsed.exceeded === 'depth' ? `JSON nested deeper than ${jsonLimits.maxDepth}` : `JSON holds more than ${jsonLimits.maxItems} items`;
    return sendCausewayError(res, parsed.json ? causewayError('invalid_request', message) : causewayError('parse_error'), parsed.id);
  }
  const json = parsed.ok ? parsed.value : undefined;
  const verdict = classifyPost({ headers, body: json, parseError: !parsed.ok });
  tag.revision = clientRevision(headers, json);
  if (auth && openDiscover && !(verdict.era === 'modern' && verdict.request.method === 'server/discover')) {
    const refused = await auth.authenticate(headers, mount.path, method);
    if (!refused.ok) return sendCausewayError(res, refused.error, null);
  }
  switch (verdict.era) {
    case 'legacy':
      tag.era = 'legacy';
      tag.method = legacyMethodLabel(json);
      if (!passthrough) return sendCausewayError(res, legacyNotServed(), null);
      if (auth && access) {
        const denied = legacyDenied(auth, access, mount.path, json);
        if (denied) return sendCausewayError(res, denied.error, denied.id);
      }
      if (deps.rate) {
        const over = await methodRate(deps.rate, principal, json);
        if (over) return sendCausewayError(res, over.error, over.id);
      }
      return passthrough.forward('POST', req.headers, { bytes: body, json }, res, signal, routingHeaders(req.headers, json), access, principal);
    case 'accepted':
      tag.era = 'modern';
      tag.method = 'notification';
      return sendStatus(res, 202);
    case 'reject': {
      const r = verdict.rejection;
      log.debug({ reason: r.reason }, 'request rejected');
      tag.notes.code = ERROR_TABLE[r.reason].code;
      return sendCausewayError(res, causewayError(r.reason, r.message, r.data), r.id);
    }
    case 'modern': {
      tag.era = 'modern';
      tag.method = verdict.request.method;
      tag.name = verdict.request.name;
      const accept = headers.accept;
      if (accept !== undefined && !/application\/json|text\/event-stream|\*\/\*/i.test(accept)) {
        return sendCausewayError(res, causewayError('not_acceptable'), verdict.request.id);
      }
      if (auth && access) {
        const denied = auth.authorize(access, mount.path, verdict.request.method, verdict.request.name);
        if (denied) return sendCausewayError(res, denied, verdict.request.id);
      }
      const over = deps.rate && (await deps.rate.refuseMethod(principal, verdict.request.method));
      if (over) return sendCausewayError(res, over, verdict.request.id);
      return serveModern({ request: verdict.request, headers, res, signal, log: log.child({ method: verdict.request.method }), access, principal, notes: tag.notes }, mount);
    }
  }
}

/** The requests of a legacy POST (one message, or a 2025-03-26 batch): notifications and responses left out. */
function requestsIn(body: unknown): Array<{ method: string; id: RequestId | null; message: JsonObject }> {
  const out: Array<{ method: string; id: RequestId | null; message: JsonObject }> = [];
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!isObject(message) || typeof message.method !== 'string' || message.id === undefined) continue;
    out.push({ method: message.method, id: typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null, message });
  }
  return out;
}

/** The first request of a legacy POST over its method's rate (limits.rateMethods). */
async function methodRate(limiter: RateLimiter, principal: string, body: unknown): Promise<{ error: CausewayError; id: RequestId | null } | undefined> {
  for (const { method, id } of requestsIn(body)) {
    const error = await limiter.refuseMethod(principal, method);
    if (error) return { error, id };
  }
  return undefined;
}

/** The first request of a legacy POST its token's scopes do not cover. */
function legacyDenied(auth: ResourceServer, access: Access, mountPath: string, body: unknown): { error: CausewayError; id: RequestId | null } | undefined {
  for (const { method, id, message } of requestsIn(body)) {
    const error = auth.authorize(access, mountPath, method, legacyName(message));
    if (error) return { error, id };
  }
  return undefined;
}
