// The front door's steps over the HTTP request, up to its body read: the probes and public
// documents, the mount, header size, host and origin, room for it, the access token, the
// principal and its rate, the HTTP method (a legacy GET or DELETE is forwarded here), the
// content type and the body itself. Listed, in order, in front-door.ts.

import { sendJson, sendStatus } from '../egress/index.js';
import { sendReadiness } from './admin.js';
import {
  checkOrigin,
  decodeHeaderValue,
  hostName,
  isValidAuthority,
  revisionLabel,
  type HeaderBag,
} from '../envelope/index.js';
import { causewayError, toCausewayError, type CausewayError, type ErrorReason } from '../errors.js';
import { principalHash, WELL_KNOWN_PRM, type ResourceServer } from '../auth/index.js';
import { AUDITED, whoOf, writeAudit, type AuditedCall } from '../audit/index.js';
import type { RateLimiter } from './rate-limit.js';
import { parseJson, readBody, type BodyReader } from './read-body.js';
import type { IngressRequest } from './server.js';
import {
  ANSWERED,
  closeAfterReply,
  NEXT,
  PAUSED,
  refuse,
  refuseUnread,
  type SignInEndpoint,
  type Visit,
} from './visit.js';

/** The HTTP methods of MCP, each of which carries the token and counts against the rate. */
function mcpMethod(method: string): boolean {
  return method === 'POST' || method === 'GET' || method === 'DELETE';
}

export function probes(v: Visit): boolean {
  if (v.method !== 'GET') return NEXT;
  if (v.path === '/healthz') {
    sendJson(v.res, 200, { status: 'ok' });
    return ANSWERED;
  }
  if (v.path !== '/readyz') return NEXT;
  sendReadiness(v.res, v.deps.notReady());
  return ANSWERED;
}

/** Public, whatever the request carries: it is how a client finds out where to get a token [RFC 9728 §3]. */
export function resourceMetadata(v: Visit): boolean {
  const { auth } = v.deps;
  if (auth === undefined || v.method !== 'GET' || !v.path.startsWith(WELL_KNOWN_PRM)) return NEXT;
  const doc = auth.metadata(v.path);
  if (doc === undefined) return NEXT;
  sendJson(v.res, 200, doc, { 'cache-control': 'max-age=300' });
  return ANSWERED;
}

export function signInPages(v: Visit): boolean | Promise<boolean> {
  const { signIn } = v.deps;
  if (signIn === undefined || v.method !== 'GET') return NEXT;
  if (v.path === signIn.path) return signInAnswer(v, signIn);
  if (signIn.client === undefined || v.path !== signIn.client.path) return NEXT;
  sendJson(v.res, 200, signIn.client.document, { 'cache-control': 'max-age=300' });
  return ANSWERED;
}

/** A user's browser back from an upstream's authorization server: a plain page saying how it went. */
async function signInAnswer(v: Visit, endpoint: SignInEndpoint): Promise<boolean> {
  const url = v.req.url ?? '/';
  const q = url.indexOf('?');
  let answer: { status: number; text: string };
  try {
    answer = await endpoint.handle(new URLSearchParams(q >= 0 ? url.slice(q + 1) : ''));
  } catch (err) {
    v.log.warn({ err: (err as Error).message }, 'sign-in callback failed');
    answer = { status: 502, text: (err as Error).message };
  }
  // The URL held a code and a state: no referrer leaves this page, and nothing caches it.
  v.res.writeHead(answer.status, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  });
  v.res.end(`${answer.text}\n`);
  return ANSWERED;
}

/** Served as usual, but the client must take its next request elsewhere (HTTP/2 sessions got GOAWAY). */
export function closingNotice(v: Visit): boolean {
  const { req } = v;
  if (v.deps.closing() && 'httpVersionMajor' in req && req.httpVersionMajor === 1)
    v.res.setHeader('connection', 'close');
  return NEXT;
}

export function mountOf(v: Visit): boolean {
  const mount = v.deps.mounts.get(v.path);
  if (mount === undefined) return refuseUnread(v, causewayError('not_found'));
  v.mount = mount;
  return NEXT;
}

export function headerSize(v: Visit): boolean {
  if (headerBytes(v.req) <= v.deps.maxHeaderBytes) return NEXT;
  closeAfterReply(v.req, v.res);
  sendStatus(v.res, 431);
  return ANSWERED;
}

function headerBytes(req: IngressRequest): number {
  let n = 0;
  const raw = req.rawHeaders;
  for (const h of raw) n += h.length + 2;
  return n;
}

export function hostHeader(v: Visit): boolean {
  const host = authorityOf(v.req);
  if (host === undefined) return refuseUnread(v, causewayError('bad_host'));
  v.host = host;
  return NEXT;
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

/** Where the headers are first read whole, for this step and every later one. */
export function origin(v: Visit): boolean {
  v.headers = headerBag(v.req);
  const checked = checkOrigin(v.deps.origin, v.host, v.headers.origin);
  return checked.ok ? NEXT : refuseUnread(v, notAllowed(v, checked.reason));
}

/**
 * A Host or Origin refused, in words naming it and the setting that would let it in; logged at
 * info the first time each is seen (a client sent to a name the settings forgot, most often).
 */
function notAllowed(v: Visit, reason: ErrorReason): CausewayError {
  const [what, value, setting] =
    reason === 'forbidden_host'
      ? ['Host', hostName(v.host), 'security.allowedHosts']
      : ['Origin', v.headers.origin ?? '', 'security.allowedOrigins'];
  const shown = JSON.stringify(value.slice(0, 256));
  if (v.deps.refusedOnce.first(`${what} ${value}`)) {
    const fields = { reason, [what.toLowerCase()]: value.slice(0, 256), setting };
    v.log.info(fields, `${what} ${shown} refused: not in ${setting}`);
  }
  return causewayError(reason, `${what} ${shown} not allowed: add it to ${setting}`);
}

function headerBag(req: IngressRequest): HeaderBag {
  const { headers } = req;
  // HTTP/1.1: node joined repeated headers into one string each, but for set-cookie, and there are
  // no pseudo-headers: the object is a bag as it is, and copying it cost more than anything read from it.
  if (req.httpVersionMajor < 2 && headers['set-cookie'] === undefined) return headers as HeaderBag;
  const bag: Record<string, string> = {};
  for (const k in headers) {
    const v = headers[k];
    if (v !== undefined && k.charCodeAt(0) !== 0x3a) bag[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return bag;
}

export function admit(v: Visit): boolean {
  const { deps, res } = v;
  if (deps.inFlight.count >= deps.maxInFlight) return refuseUnread(v, causewayError('overloaded'));
  deps.inFlight.count++;
  deps.served.count++;
  v.started = performance.now();
  v.tag = {
    era: 'rejected',
    method: 'none',
    revision: revisionLabel(v.headers['mcp-protocol-version']?.trim()),
    notes: {},
    // Set by later steps: named here, so the object is made with room for them.
    name: undefined,
    client: undefined,
  };
  res.on('close', () => closed(v));
  return NEXT;
}

/**
 * The response is done or the client gone: the request is observed, no longer in flight, and its work stopped if
 * unanswered.
 */
function closed(v: Visit): void {
  const { res, deps, tag } = v;
  deps.inFlight.count--;
  deps.served.count--;
  if (!res.writableFinished) v.leave();
  const seconds = (performance.now() - v.started) / 1000;
  deps.observe(tag, res.statusCode, seconds);
  if (deps.count && tag.era !== 'rejected') {
    deps.count(tag.revision, tag.notes.upstream ?? v.mount.upstream?.upstreamName ?? v.mount.path, tag.client);
  }
  if (deps.accessSample > 0 && (deps.accessSample >= 1 || Math.random() < deps.accessSample)) {
    v.log.info(
      {
        era: tag.era,
        method: tag.method,
        name: tag.name?.slice(0, 256),
        status: res.statusCode,
        ms: Math.round(seconds * 1e4) / 10,
        finished: res.writableFinished,
        ...tag.notes,
        ...(tag.notes.traceId === undefined ? traceIdOf(v.headers.traceparent) : {}),
      },
      'request',
    );
  }
  if (deps.audit) audit(v, seconds);
}

/** log.audit: the audit record's line for each audited call of the request, however it ended. */
function audit(v: Visit, seconds: number): void {
  const calls = v.audited.length > 0 ? v.audited : refusedUnread(v);
  if (calls.length === 0) return;
  const { tag, mount, res } = v;
  const upstream = tag.notes.upstream ?? mount.upstream?.upstreamName;
  // The mount's own upstream's era as last found (legacy when it has no modern client); a federated
  // mount's member's is not known here.
  const own = mount.upstream !== undefined && mount.upstream.upstreamName === upstream ? mount.upstream : undefined;
  writeAudit(v.log, calls, {
    who: whoOf(v.access, v.deps.principal, v.headers, v.principal),
    mount: mount.path,
    upstream,
    era: tag.era === 'legacy' ? 'legacy' : 'modern',
    upstreamEra: own && (own.modern ? own.modern.era.current : 'legacy'),
    refused: v.refused,
    code: tag.notes.code,
    tap: v.tap,
    status: res.statusCode,
    finished: res.writableFinished,
    ms: Math.round(seconds * 1e4) / 10,
    traceId: tag.notes.traceId ?? traceIdOf(v.headers.traceparent).traceId,
  });
}

/**
 * A request refused before its body was read (a token refused, the principal over its rate) is
 * audited by what its headers name: a 2026 client's Mcp-Method and Mcp-Name. A legacy client's
 * names its method only in the body, which a refusal leaves unread.
 */
function refusedUnread(v: Visit): AuditedCall[] {
  const method = v.headers['mcp-method']?.trim();
  if (v.refused === undefined || v.body !== undefined || method === undefined || !AUDITED.has(method)) return [];
  const name = v.headers['mcp-name'];
  return [{ method, name: name === undefined ? undefined : decodeHeaderValue(name), id: null }];
}

/** The trace id of a W3C traceparent header, for the access log of a request no span recorded. */
function traceIdOf(traceparent: string | undefined): { traceId?: string } {
  const m =
    traceparent === undefined ? null : /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}/.exec(traceparent.trim());
  return m ? { traceId: m[1] } : {};
}

/** Every era's every method carries the token, checked before the body is read [AUTH]. */
export function accessToken(v: Visit): boolean | Promise<boolean> {
  const { auth } = v.deps;
  if (auth === undefined) return NEXT;
  const { method, headers } = v;
  // With auth.publicDiscover, a tokenless server/discover is let through to the classifier, which must agree.
  v.openDiscover =
    auth.publicDiscover &&
    method === 'POST' &&
    headers.authorization === undefined &&
    headers['mcp-method'] === 'server/discover';
  if (v.openDiscover || !mcpMethod(method)) return NEXT;
  return checkToken(v, auth);
}

async function checkToken(v: Visit, auth: ResourceServer): Promise<boolean> {
  const verdict = await auth.authenticate(v.headers, v.mount.path, v.method);
  if (!verdict.ok) {
    v.log.debug({ reason: verdict.failure }, 'access token refused');
    return refuseUnread(v, verdict.error);
  }
  v.access = verdict.access;
  v.principal = verdict.principal;
  const nonce = auth.nonceFor(verdict.access);
  if (nonce !== undefined) v.res.setHeader('dpop-nonce', nonce);
  return NEXT;
}

/** The resource server hashed a verified token's principal; any other request's is hashed here, once. */
export function principal(v: Visit): boolean {
  if (v.access === undefined) v.principal = principalHash(v.deps.principal, v.headers);
  return NEXT;
}

export function requestRate(v: Visit): boolean | Promise<boolean> {
  const { rate } = v.deps;
  if (rate === undefined || !mcpMethod(v.method)) return NEXT;
  return overRate(v, rate);
}

async function overRate(v: Visit, rate: RateLimiter): Promise<boolean> {
  const refused = await rate.refuse(v.principal);
  return refused ? refuseUnread(v, refused) : NEXT;
}

export function legacyStream(v: Visit): boolean | Promise<void> {
  const { method, tag } = v;
  if (method !== 'GET' && method !== 'DELETE') return NEXT;
  if (v.headers['mcp-session-id'] === undefined) {
    return refuse(v, causewayError('method_not_allowed', `${method} needs a legacy Mcp-Session-Id`), null);
  }
  tag.era = 'legacy';
  tag.method = method === 'GET' ? 'stream' : 'terminate';
  const { passthrough } = v.mount;
  const { res, signal, access, principal } = v;
  return passthrough.forward({ method, headers: v.req.headers, res, signal, access, principal });
}

export function postOnly(v: Visit): boolean {
  return v.method === 'POST' ? NEXT : refuseUnread(v, causewayError('method_not_allowed'));
}

export function contentType(v: Visit): boolean {
  const type = v.headers['content-type'];
  if (type === undefined || type === 'application/json' || /^application\/json\b/i.test(type.trim())) return NEXT;
  v.req.resume();
  return refuseUnread(v, causewayError('unsupported_media_type'));
}

export function readJson(v: Visit): typeof PAUSED {
  readBody(v.req, v.deps.body, new JsonBody(v), v.deps.bodyDeadlines);
  return PAUSED;
}

/** The body read's end: the walk goes on with the parsed body, or the request is refused. */
class JsonBody implements BodyReader {
  constructor(private readonly v: Visit) {}

  read(body: Buffer): void {
    try {
      this.parsed(body);
    } catch (err) {
      this.v.unhandled(err);
    }
  }

  failed(err: Error): void {
    // The client is gone: there is no one to answer.
    if (this.v.gone) return;
    try {
      refuseUnread(this.v, toCausewayError(err));
    } catch (e) {
      this.v.unhandled(e);
    }
  }

  private parsed(body: Buffer): void {
    const { v } = this;
    v.body = body;
    const jsonLimits = v.deps.json;
    const parsed = parseJson(body, jsonLimits);
    if ('exceeded' in parsed) {
      v.log.debug({ exceeded: parsed.exceeded }, 'request body over the JSON limits');
      const message =
        parsed.exceeded === 'depth'
          ? `JSON nested deeper than ${jsonLimits.maxDepth}`
          : `JSON holds more than ${jsonLimits.maxItems} items`;
      refuse(v, parsed.json ? causewayError('invalid_request', message) : causewayError('parse_error'), parsed.id);
      return;
    }
    if (parsed.ok) v.json = parsed.value;
    else v.parseError = true;
    v.carryOn();
  }
}
