// The front door's steps over the JSON-RPC message a POST's body holds: the classifier's verdict,
// a tokenless discover held to server/discover, the era and method named for metrics and the
// log, the calls the audit record is written for, then what each era asks before it is handed
// on (front-door.ts hands it): a legacy message's scopes and method rates, a modern request's
// Accept, scopes and method rate.

import { AnswerTap, AUDITED, type AuditedCall } from '../audit/index.js';
import type { ResourceServer } from '../auth/index.js';
import { sendStatus } from '../egress/index.js';
import {
  classifyPost,
  LEGACY_METHODS,
  META_CLIENT_INFO,
  META_VERSION,
  revisionLabel,
  type Classified,
  type HeaderBag,
} from '../envelope/index.js';
import { causewayError, ERROR_TABLE } from '../errors.js';
import { isObject, type JsonObject, type RequestId } from '../jsonrpc.js';
import { legacyName } from '../passthrough/index.js';
import type { RateLimiter } from './rate-limit.js';
import type { Quotas } from '../quotas/index.js';
import { ANSWERED, NEXT, refuse, type ClientInfo, type Visit } from './visit.js';

type ModernVerdict = Extract<Classified, { era: 'modern' }>;

export function classify(v: Visit): boolean {
  v.verdict = classifyPost({ headers: v.headers, body: v.json, parseError: v.parseError });
  v.tag.revision = clientRevision(v.headers, v.json);
  if (v.deps.count) v.tag.client = clientInfoOf(v.json);
  return NEXT;
}

/** The clientInfo a message names: a modern request's `_meta`, or a legacy initialize's params. */
function clientInfoOf(body: unknown): ClientInfo | undefined {
  if (!isObject(body) || !isObject(body.params)) return undefined;
  const { params } = body;
  const info = isObject(params._meta) ? params._meta[META_CLIENT_INFO] : undefined;
  const named = isObject(info) ? info : body.method === 'initialize' ? params.clientInfo : undefined;
  if (!isObject(named) || typeof named.name !== 'string') return undefined;
  // The message's own object when it says both (read once, when the request is counted): no copy per request.
  if (typeof named.version === 'string') return named as { name: string; version: string };
  return { name: named.name, version: '' };
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
      if (typeof meta === 'object' && meta !== null && META_VERSION in meta)
        return revisionLabel((meta as Record<string, unknown>)[META_VERSION]);
      if (method === 'initialize') return revisionLabel((params as { protocolVersion?: unknown }).protocolVersion);
    }
  }
  return revisionLabel(headers['mcp-protocol-version']?.trim());
}

/**
 * A tokenless request let through for server/discover (auth.publicDiscover) is anything else: the token is asked for.
 */
export function tokenlessDiscover(v: Visit): boolean | Promise<boolean> {
  const { auth } = v.deps;
  const { verdict } = v;
  if (
    auth === undefined ||
    !v.openDiscover ||
    (verdict.era === 'modern' && verdict.request.method === 'server/discover')
  )
    return NEXT;
  return requireToken(v, auth);
}

async function requireToken(v: Visit, auth: ResourceServer): Promise<boolean> {
  const refused = await auth.authenticate(v.headers, v.mount.path, v.method);
  return refused.ok ? NEXT : refuse(v, refused.error, null);
}

export function eraTags(v: Visit): boolean {
  const { verdict, tag } = v;
  if (verdict.era === 'legacy') {
    tag.era = 'legacy';
    tag.method = legacyMethodLabel(v.json);
  } else if (verdict.era === 'accepted') {
    tag.era = 'modern';
    tag.method = 'notification';
  } else if (verdict.era === 'modern') {
    tag.era = 'modern';
    tag.method = verdict.request.method;
    tag.name = verdict.request.name;
  }
  return NEXT;
}

/**
 * log.audit: the requests of the message the audit record is written for (of a legacy batch, each
 * one), and a tap on the answer, which for a legacy client and a modern upstream no stage parses.
 */
export function auditCalls(v: Visit): boolean {
  if (!v.deps.audit) return NEXT;
  const { verdict } = v;
  const audited: AuditedCall[] = [];
  if (verdict.era === 'modern' && AUDITED.has(verdict.request.method)) {
    const { method, name, id } = verdict.request;
    audited.push({ method, name, id });
  } else if (verdict.era === 'legacy') {
    for (const { method, id, message } of requestsIn(v.json)) {
      if (AUDITED.has(method)) audited.push({ method, name: legacyName(message), id });
    }
  }
  if (audited.length === 0) return NEXT;
  v.audited = audited;
  v.tap = new AnswerTap(v.res);
  return NEXT;
}

/** Bounded: a known legacy method, 'notification', 'response' or 'other'. */
function legacyMethodLabel(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'other';
  const m = (body as { method?: unknown; id?: unknown }).method;
  if (typeof m !== 'string') return 'response';
  if (m.startsWith('notifications/')) return 'notification';
  return LEGACY_METHODS.has(m) ? m : 'other';
}

export function accepted(v: Visit): boolean {
  if (v.verdict.era !== 'accepted') return NEXT;
  sendStatus(v.res, 202);
  return ANSWERED;
}

export function rejected(v: Visit): boolean {
  const { verdict } = v;
  if (verdict.era !== 'reject') return NEXT;
  const r = verdict.rejection;
  v.log.debug({ reason: r.reason }, 'request rejected');
  v.tag.notes.code = ERROR_TABLE[r.reason].code;
  return refuse(v, causewayError(r.reason, r.message, r.data), r.id);
}

/** The first request of a legacy POST its token's scopes do not cover. */
export function legacyScopes(v: Visit): boolean {
  const { auth } = v.deps;
  const { access } = v;
  if (v.verdict.era !== 'legacy' || auth === undefined || access === undefined) return NEXT;
  for (const { method, id, message } of requestsIn(v.json)) {
    const error = auth.authorize(access, v.mount.path, method, legacyName(message));
    if (error) return refuse(v, error, id);
  }
  return NEXT;
}

export function legacyLimits(v: Visit): boolean | Promise<boolean> {
  const { rate, quotas } = v.deps;
  if (v.verdict.era !== 'legacy' || (rate === undefined && quotas === undefined)) return NEXT;
  return legacyOverLimits(v, rate, quotas);
}

/** The first request of a legacy POST over its method's rate (limits.rateMethods) or its tenant's quota. */
async function legacyOverLimits(v: Visit, rate: RateLimiter | undefined, quotas: Quotas | undefined): Promise<boolean> {
  for (const { method, id, message } of requestsIn(v.json)) {
    const name = legacyName(message);
    const error =
      (await rate?.refuseMethod(v.principal, method)) ??
      (quotas?.methods.has(method) && v.mount.view?.shows(method, name) !== false
        ? await quotas.refuse({ tenant: tenantOf(v), mount: v.mount.path, method, name })
        : undefined);
    if (error) return refuse(v, error, id);
  }
  return NEXT;
}

export function modernLimits(v: Visit): boolean | Promise<boolean> {
  const { rate, quotas } = v.deps;
  const { verdict } = v;
  if (verdict.era !== 'modern') return NEXT;
  const { method, name } = verdict.request;
  // A name the mount's view hides is refused later as unknown: it spends no quota.
  const counted = quotas?.methods.has(method) === true && v.mount.view?.shows(method, name) !== false;
  return rate === undefined && !counted ? NEXT : modernOverLimits(v, rate, counted ? quotas : undefined, verdict);
}

/** A modern request over its method's rate, or a call that finds its tenant's quota spent. */
async function modernOverLimits(
  v: Visit,
  rate: RateLimiter | undefined,
  quotas: Quotas | undefined,
  { request }: ModernVerdict,
): Promise<boolean> {
  const { method, name } = request;
  const over =
    (await rate?.refuseMethod(v.principal, method)) ??
    (await quotas?.refuse({ tenant: tenantOf(v), mount: v.mount.path, method, name }));
  return over ? refuse(v, over, request.id) : NEXT;
}

/** The tenant a quota counts for: the token's tenant claim, else the principal. */
const tenantOf = (v: Visit): string => {
  const tenant = v.access?.identity.tenant;
  return tenant === undefined ? `principal:${v.principal}` : `tenant:${tenant}`;
};

/** The requests of a legacy POST (one message, or a 2025-03-26 batch): notifications and responses left out. */
function requestsIn(body: unknown): Array<{ method: string; id: RequestId | null; message: JsonObject }> {
  const out: Array<{ method: string; id: RequestId | null; message: JsonObject }> = [];
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!isObject(message) || typeof message.method !== 'string' || message.id === undefined) continue;
    out.push({
      method: message.method,
      id: typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null,
      message,
    });
  }
  return out;
}

export function acceptable(v: Visit): boolean {
  const { verdict } = v;
  const accept = v.headers.accept;
  if (
    verdict.era !== 'modern' ||
    accept === undefined ||
    accept.includes('application/json') ||
    /application\/json|text\/event-stream|\*\/\*/i.test(accept)
  )
    return NEXT;
  return refuse(v, causewayError('not_acceptable'), verdict.request.id);
}

export function modernScopes(v: Visit): boolean {
  const { auth } = v.deps;
  const { verdict, access } = v;
  if (verdict.era !== 'modern' || auth === undefined || access === undefined) return NEXT;
  const denied = auth.authorize(access, v.mount.path, verdict.request.method, verdict.request.name);
  return denied ? refuse(v, denied, verdict.request.id) : NEXT;
}
