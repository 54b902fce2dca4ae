// One request at the front door (a Visit), what the front door is given to serve it with, and
// the words of the walk its steps share: a step goes on (NEXT) or has the request answered
// (ANSWERED), refusing it with the spec's error where that is the answer.

import { constants as h2constants, type Http2ServerRequest } from 'node:http2';
import { sendCausewayError, type HttpResponse } from '../egress/index.js';
import type { Classified, HeaderBag, OriginPolicy } from '../envelope/index.js';
import { toCausewayError, type CausewayError } from '../errors.js';
import type { Access, PrincipalPolicy, ResourceServer } from '../auth/index.js';
import type { AnswerTap, AuditedCall } from '../audit/index.js';
import type { RequestId } from '../jsonrpc.js';
import { requestLogger, type Logger } from '../log.js';
import type { AccessNotes } from '../routing/index.js';
import type { Mount } from './mount.js';
import type { OnceEach } from '../bounded.js';
import type { Deadlines } from '../deadlines.js';
import type { JsonLimits } from './json-limits.js';
import type { RateLimiter } from './rate-limit.js';
import type { Quotas } from '../quotas/index.js';
import type { BodyLimits } from './read-body.js';
import type { IngressRequest } from './server.js';

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
  /** Quotas per tenant (quotas.rules); undefined when none is set. */
  quotas: Quotas | undefined;
  log: Logger;
  /** Answers /readyz: why not ready (draining, the store unreachable), or undefined when ready. */
  notReady(): string | undefined;
  /** True once the listener is closed: every HTTP/1.1 answer then closes its connection. */
  closing(): boolean;
  /** Called once per MCP request when its response ends. */
  observe(tag: Tag, status: number, seconds: number): void;
  /**
   * Called once per MCP request of either era when its response ends (not for one the classifier
   * rejected): the status page's traffic. `upstream` is the upstream it went to, or a federated mount's path.
   */
  count?(revision: string, upstream: string, client: ClientInfo | undefined): void;
  /** Share of MCP requests given an access log line (log.accessSample). */
  accessSample: number;
  /** log.audit: every tools/call, prompts/get and resources/read gets its audit line, sampled never. */
  audit: boolean;
  inFlight: { count: number };
  /** The requests served with these deps still under way: a reload lets go of what it replaced once none is. */
  served: { count: number };
  /** The Hosts and Origins refused and logged already (frontDoor makes it). */
  refusedOnce: OnceEach;
  /** The deadlines of the bodies being read, each body.timeoutMs (frontDoor makes it). */
  bodyDeadlines: Deadlines;
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

/**
 * `name`: the tool, prompt or resource a modern request names; `notes`: what the later stages
 * add. Both for the access log only (not metric labels); the name is cut to 256 characters there.
 */
export type Tag = Pick<RequestSample, 'era' | 'method' | 'revision'> & {
  name?: string;
  notes: AccessNotes;
  /** The clientInfo the message carries (a modern request's _meta, a legacy initialize), for the status page. */
  client?: ClientInfo;
};

/** What a client says it is: clientInfo's name and version, both strings. */
export interface ClientInfo {
  name: string;
  version: string;
}

/**
 * One request at the front door: made as it arrives, filled in by the steps in turn. Every field
 * is there from the start, so every visit has one shape; each is set by the step named.
 */
/** No call audited: every request's until auditCalls finds one (no array per request). */
const NO_CALLS: readonly AuditedCall[] = Object.freeze([]);

export class Visit {
  readonly path: string;
  readonly method: string;
  /** mountOf */
  mount!: Mount;
  /** hostHeader */
  host!: string;
  /** origin */
  headers!: HeaderBag;
  /** admit: from then on in flight until the response closes, when it is observed. */
  started = 0;
  tag!: Tag;
  /** The client went before the answer was sent (admit's close listener). */
  gone = false;
  /** Told once, when the client goes before the answer: set by a stage that runs the request without a signal. */
  goneTo: { clientGone(): void } | undefined = undefined;
  private aborter: AbortController | undefined = undefined;
  private logger: Logger | undefined = undefined;
  /** accessToken: the verified token's, when a resource server checked the request. */
  access: Access | undefined = undefined;
  /** Who asks (auth/principal.ts), hashed once: by the resource server with the token, else by `principal`. */
  principal = '';
  /** accessToken: a tokenless server/discover let through under auth.publicDiscover, until the classifier agrees. */
  openDiscover = false;
  /** readJson: the body, and what it parsed to (undefined when it is not JSON). */
  body!: Buffer;
  json: unknown = undefined;
  parseError = false;
  /** classify */
  verdict!: Classified;
  /** auditCalls: the requests the audit record is written for, and the tap on their answer (log.audit). */
  audited: readonly AuditedCall[] = NO_CALLS;
  tap: AnswerTap | undefined = undefined;
  /** refuse, refuseUnread: the front door's own refusal, for the audit record's outcome. */
  refused: CausewayError | undefined = undefined;
  /** A paused walk (PAUSED): the step it goes on from, and the walk that goes on. */
  private resumeAt = 0;
  private walkOn: ((v: Visit, from: number) => void) | undefined = undefined;

  constructor(
    readonly req: IngressRequest,
    readonly res: HttpResponse,
    readonly deps: FrontDoorDeps,
    readonly reqId: string,
  ) {
    this.path = pathOf(req);
    this.method = req.method ?? 'GET';
  }

  /** The request's logger (its reqId bound), made when first written to. */
  get log(): Logger {
    return (this.logger ??= requestLogger(this.deps.log, { reqId: this.reqId }));
  }

  /** Aborted when the client goes before the answer; made when a stage first asks for it. */
  get signal(): AbortSignal {
    if (this.aborter === undefined) {
      this.aborter = new AbortController();
      if (this.gone) this.aborter.abort();
    }
    return this.aborter.signal;
  }

  /** The walk pauses at the step before `at`; `walkOn` goes on from `at` when carryOn is called. */
  pause(at: number, walkOn: (v: Visit, from: number) => void): void {
    this.resumeAt = at;
    this.walkOn = walkOn;
  }

  /** A paused step is done and says NEXT: the walk goes on. */
  carryOn(): void {
    const walkOn = this.walkOn!;
    this.walkOn = undefined;
    walkOn(this, this.resumeAt);
  }

  /** An error no step handled: logged, and answered with the spec's error (never a stack trace). */
  unhandled(err: unknown): void {
    this.log.error({ err }, 'unhandled error at the front door');
    sendCausewayError(this.res, toCausewayError(err), null);
  }

  /** The client went before the answer: whatever runs the request is stopped. */
  leave(): void {
    this.gone = true;
    this.aborter?.abort();
    const told = this.goneTo;
    this.goneTo = undefined;
    told?.clientGone();
  }
}

/** What a step says: go on to the next one, or the request is answered (or given up). */
export const NEXT = false;
export const ANSWERED = true;
/** The step goes on by itself: it answers the request, or calls `v.carryOn()` (the body read). */
export const PAUSED = 2;

/**
 * One check or stage of the walk: a plain synchronous function where its check is, a promise
 * only where it waits (the token, the rate, the answer). A promise settling to anything but NEXT
 * ends the walk.
 */
export type Step = (v: Visit) => boolean | typeof PAUSED | Promise<boolean | void>;

/** The spec's error for the request, with the id of the request it answers. */
export function refuse(v: Visit, error: CausewayError, id: RequestId | null): boolean {
  v.refused = error;
  sendCausewayError(v.res, error, id);
  return ANSWERED;
}

/** The same before the body is read: the rest of it is left unread (closeAfterReply). */
export function refuseUnread(v: Visit, error: CausewayError): boolean {
  v.refused = error;
  closeAfterReply(v.req, v.res);
  sendCausewayError(v.res, error, null);
  return ANSWERED;
}

/**
 * A request refused before its body was read to the end must not have the rest read: close the
 * HTTP/1.1 connection after the reply, or reset the h2 stream with NO_ERROR once the reply is sent
 * [RFC 9113 §8.1]. Otherwise the discarded body is read without bound. No-op when there is no body.
 */
export function closeAfterReply(req: IngressRequest, res: HttpResponse): void {
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

function pathOf(req: IngressRequest): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q >= 0 ? url.slice(0, q) : url;
}
