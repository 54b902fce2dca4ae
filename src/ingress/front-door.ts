// The request handler behind the ingress. Every request walks STEPS in order, each step a check
// or a stage over the one Visit the request is (visit.ts), until one answers it: a probe or public
// document, the spec's error, the mount's legacy face, or the pipeline for a modern request. The
// steps over the HTTP request are in request-steps.ts, those over its JSON-RPC message in
// message-steps.ts; the two that hand a request on are here. Nothing thrown here reaches the
// client as a stack trace.

import { newRequestId, tagResponse } from '../egress/index.js';
import { inRequestLog } from '../log.js';
import { routingHeaders } from '../passthrough/index.js';
import { serveModern } from '../pipeline.js';
import {
  acceptable,
  accepted,
  auditCalls,
  classify,
  eraTags,
  legacyLimits,
  legacyScopes,
  modernLimits,
  modernScopes,
  rejected,
  tokenlessDiscover,
} from './message-steps.js';
import {
  accessToken,
  admit,
  closingNotice,
  contentType,
  headerSize,
  hostHeader,
  legacyStream,
  mountOf,
  origin,
  postOnly,
  principal,
  probes,
  readJson,
  requestRate,
  resourceMetadata,
  signInPages,
} from './request-steps.js';
import { OnceEach } from '../bounded.js';
import { Deadlines } from '../deadlines.js';
import type { IngressHandler } from './server.js';
import { ANSWERED, NEXT, PAUSED, Visit, type FrontDoorDeps, type Step } from './visit.js';

export type { FrontDoorDeps, RequestSample, SignInEndpoint } from './visit.js';

/** The walk of every request, in order; built once. */
const STEPS: readonly Step[] = [
  // Open to anyone, on a mount or not.
  probes, // GET /healthz, /readyz
  resourceMetadata, // RFC 9728 documents, with a resource server
  signInPages, // an upstream's sign-in callback, Causeway's client metadata document
  closingNotice, // never answers: once the listener is closed, HTTP/1.1 answers close the connection
  // Where it goes, where it comes from, and whether there is room for it.
  mountOf, // not_found
  headerSize, // 431
  hostHeader, // bad_host
  origin, // the origin policy's refusal
  admit, // overloaded; in flight and observed from here on
  // Who asks, and how often.
  accessToken, // the resource server's refusal; a DPoP-Nonce for the next proof
  principal, // hashed once, read by every later stage
  requestRate, // rate_limited
  // The HTTP method and the body.
  legacyStream, // GET, DELETE: method_not_allowed without Mcp-Session-Id, else the legacy face answers
  postOnly, // method_not_allowed
  contentType, // unsupported_media_type
  readJson, // the body limits; parse_error, or invalid_request past the JSON limits
  // The message, and what its era asks of it.
  classify, // the classifier's verdict
  tokenlessDiscover, // without a token, server/discover only
  eraTags, // the era and method, for metrics and the access log
  auditCalls, // log.audit: the calls the audit record is written for
  accepted, // 202 for a notification or a response
  rejected, // the classifier's error
  legacyScopes, // insufficient_scope for a request of the message or batch
  legacyLimits, // rate_limited for a request over its method's rate; quota_exceeded for its tenant's spent quota
  forwardLegacy, // the legacy face answers
  acceptable, // not_acceptable
  modernScopes, // insufficient_scope
  modernLimits, // rate_limited over the method's rate; quota_exceeded
  serve, // the pipeline answers
];

/** How many refused Hosts and Origins a replica remembers having logged. */
const REFUSALS_REMEMBERED = 256;

/** What the front door is given; it adds what it keeps itself. */
export type FrontDoorGiven = Omit<FrontDoorDeps, 'refusedOnce' | 'served' | 'bodyDeadlines'>;

/** The ingress's handler, whose deps a reload replaces. */
export interface FrontDoor extends IngressHandler {
  /**
   * Requests from now on are served with `given`; those under way finish with what they began
   * with. Returns the count of those, which falls to 0 as they end.
   */
  replace(given: FrontDoorGiven): { readonly count: number };
}

export function frontDoor(given: FrontDoorGiven): FrontDoor {
  const refusedOnce = new OnceEach(REFUSALS_REMEMBERED);
  const made = (next: FrontDoorGiven, bodyDeadlines?: Deadlines): FrontDoorDeps => ({
    ...next,
    refusedOnce,
    served: { count: 0 },
    // Bodies under way keep their deadlines; a new timeout starts a new list.
    bodyDeadlines: bodyDeadlines?.ms === next.body.timeoutMs ? bodyDeadlines : new Deadlines(next.body.timeoutMs),
  });
  let deps = made(given);
  const door: IngressHandler = (req, res) => {
    const reqId =
      typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'].slice(0, 128) : newRequestId();
    tagResponse(res, reqId);
    walkFrom(new Visit(req, res, deps, reqId), 0);
  };
  const replace = (next: FrontDoorGiven) => {
    const { served, bodyDeadlines } = deps;
    deps = made(next, bodyDeadlines);
    return served;
  };
  return Object.assign(door, { replace });
}

/**
 * Steps in turn from `from` until one answers: plain calls while each answers at once (the whole
 * walk, for a request the warm lane takes), awaited from the first step that returns a promise. A
 * step that pauses (the body read) goes on by itself, with `v.carryOn()`: no promise.
 */
function walk(v: Visit, from: number): typeof ANSWERED | typeof PAUSED | Promise<void> {
  for (let i = from; i < STEPS.length; i++) {
    let said: ReturnType<Step>;
    try {
      said = STEPS[i]!(v);
    } catch (err) {
      v.unhandled(err);
      return ANSWERED;
    }
    if (said === NEXT) continue;
    if (said === ANSWERED) return ANSWERED;
    if (said === PAUSED) {
      v.pause(i + 1, walkFrom);
      return PAUSED;
    }
    return walkOn(v, said, i + 1);
  }
  return ANSWERED;
}

/** The walk from step `from`, as part of its request at debug: a request's first, or a paused walk going on. */
function walkFrom(v: Visit, from: number): void {
  const walked = inRequestLog(v.deps.log, v.reqId, walk, v, from);
  if (typeof walked === 'object') walked.catch((err: unknown) => v.unhandled(err));
}

async function walkOn(v: Visit, said: Promise<boolean | void>, from: number): Promise<void> {
  if ((await said) !== NEXT) return;
  for (let i = from; i < STEPS.length; i++) {
    const next = STEPS[i]!(v);
    if (next === NEXT) continue;
    if (next === ANSWERED) return;
    if (next === PAUSED) {
      v.pause(i + 1, walkFrom);
      return;
    }
    if ((await next) !== NEXT) return;
  }
}

function forwardLegacy(v: Visit): boolean | Promise<void> {
  if (v.verdict.era !== 'legacy') return NEXT;
  const { req, json } = v;
  const extra = routingHeaders(req.headers, json);
  const body = { bytes: v.body, json };
  const { res, signal, access, principal } = v;
  return v.mount.passthrough.forward({
    method: 'POST',
    headers: req.headers,
    body,
    res,
    signal,
    extraHeaders: extra,
    access,
    principal,
  });
}

function serve(v: Visit): boolean | Promise<void> {
  const { verdict } = v;
  if (verdict.era !== 'modern') return NEXT;
  if (v.mount.warm?.take(v, verdict.request, serveFully)) return ANSWERED;
  return serveFully(v);
}

/** The pipeline, for a request the warm lane did not take (or handed back before anything was sent). */
function serveFully(v: Visit): Promise<void> {
  const request = (v.verdict as Extract<Visit['verdict'], { era: 'modern' }>).request;
  return serveModern(
    {
      request,
      headers: v.headers,
      res: v.res,
      signal: v.signal,
      log: v.log.child({ method: request.method }),
      access: v.access,
      principal: v.principal,
      notes: v.tag.notes,
      body: v.body,
    },
    v.mount,
  );
}
