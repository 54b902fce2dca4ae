// The legacy Streamable HTTP requests of one upstream's sessions: the headers of each kind of
// exchange, and the request itself, to the session's URL (the first when it has none) with its
// principal's credential, sent through the upstream's composed client (compose/), which owns
// the sockets, the credential, the URLs' health and the trace context. Also how a refusal reads.

import { CausewayError } from '../../errors.js';
import type { JsonRpcErrorResponse } from '../../jsonrpc.js';
import { readRefusal, type ResponseBody } from './body.js';
import {
  REFUSAL_BODY_LIMIT,
  upstreamHeaders,
  type SessionRef,
  type TargetSet,
  type UpstreamRequestKind,
} from '../core/index.js';
import { decodeMessages } from './inbound.js';
import type { Handler, Response, UpstreamHttp } from './compose/index.js';

export type { Response } from './compose/index.js';

/** A long-lived request (a stream, a patient call): no idle body timeout. */
export const LONG_LIVED = 1;
/** Failing to reach the target is a TargetUnreachableError: nothing was sent, so the pool moves the session. */
export const MOVABLE = 2;

/**
 * Where a request to an upstream went, for the words of its refusal:
 * the URL's path only (no query, no credentials).
 */
export interface SentTo {
  upstream: string;
  method: string;
  path: string;
}

/**
 * An upstream's non-2xx answer, in words that say where it came from and what to check:
 * `Upstream "default" answered HTTP 404 to POST /wrong-path: check upstream.url`. `rpc`: the
 * JSON-RPC error the upstream gave, kept as the cause (a -32022 is an era refusal); `detail`, its
 * message. Without `to` (a request sent outside a dispatcher), only the status is known.
 */
export function httpRefusal(status: number, detail?: string, rpc?: unknown, to?: SentTo): CausewayError {
  const said = detail ? ` (${detail})` : '';
  const hint = to === undefined ? undefined : refusalHint(status);
  const message =
    to === undefined
      ? `Upstream answered HTTP ${status}${detail ? `: ${detail}` : ''}`
      : `Upstream ${JSON.stringify(to.upstream)} answered HTTP ${status} to ${to.method} ${to.path}${said}` +
        (hint ? `: ${hint}` : '');
  return new CausewayError('upstream_unavailable', message, undefined, rpc === undefined ? undefined : { cause: rpc });
}

/** What to check when an upstream refuses: its URL for a path it does not serve, its credential for a 401 or 403. */
function refusalHint(status: number): string | undefined {
  if (status === 404 || status === 405 || status === 410) return 'check upstream.url';
  if (status === 401 || status === 403) return 'check upstream.headers and upstream.credentials';
  return undefined;
}

/** Where `res` was sent, when it came through an UpstreamDispatcher. */
export function sentTo(res: { opaque?: unknown }): SentTo | undefined {
  return res.opaque instanceof Sent ? res.opaque.to : undefined;
}

/** Where a POST to a session's `url` went, for a refusal read outside send() (the warm lane's own dispatch). */
export function postedTo(upstream: string, url: string | undefined): SentTo | undefined {
  return url === undefined ? undefined : { upstream, method: 'POST', path: pathOf(url) };
}

/** A dispatcher's request, as undici hands it back with the response (its `opaque`). */
class Sent {
  constructor(
    readonly upstream: string,
    readonly method: string,
    readonly url: string,
  ) {}

  get to(): SentTo {
    return { upstream: this.upstream, method: this.method, path: pathOf(this.url) };
  }
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return '/';
  }
}

/** The JSON-RPC error in an upstream's error body, if it has one. */
export async function readErrorBody(res: { body: ResponseBody }): Promise<JsonRpcErrorResponse | undefined> {
  return errorBodyOf(await readRefusal(res.body, REFUSAL_BODY_LIMIT));
}

/** The JSON-RPC error a refusal's body (read as text; undefined when it was not) holds, if it is one. */
export function errorBodyOf(text: string | undefined): JsonRpcErrorResponse | undefined {
  if (text === undefined) return undefined;
  try {
    const [m] = decodeMessages(text);
    return m?.kind === 'response' && 'error' in m.message ? m.message : undefined;
  } catch {
    return undefined;
  }
}

/** A non-2xx answer as a refusal, with the upstream's own error message when it sent one (a stdio child's too). */
export async function refusalOf(res: {
  statusCode: number;
  body: ResponseBody;
  opaque?: unknown;
}): Promise<CausewayError> {
  const rpc = await readErrorBody(res);
  return httpRefusal(res.statusCode, rpc?.error.message.slice(0, 200), rpc?.error, sentTo(res));
}

export class UpstreamDispatcher {
  private readonly first: string;

  constructor(
    private readonly http: UpstreamHttp,
    targets: TargetSet,
    private readonly configured: Record<string, string> | undefined,
    /** The upstream's name, in the words of its refusals. */
    private readonly name = 'upstream',
  ) {
    this.first = targets.at(0)!;
  }

  headers(
    kind: UpstreamRequestKind,
    session: SessionRef | undefined,
    extra?: Record<string, string>,
    lastEventId?: string,
  ): Record<string, string> {
    return upstreamHeaders(kind, session, this.configured, extra, lastEventId);
  }

  /** Where a request to `session` goes, for the words of a refusal read outside send(). */
  to(method: string, session: Pick<SessionRef, 'target'>): SentTo {
    return { upstream: this.name, method, path: pathOf(session.target ?? this.first) };
  }

  /** `how`: LONG_LIVED and MOVABLE, or 0. */
  send(
    method: 'POST' | 'GET' | 'DELETE',
    session: Pick<SessionRef, 'target' | 'principal'>,
    headers: Record<string, string>,
    body: string | Uint8Array | undefined,
    signal: AbortSignal,
    how = 0,
  ): Promise<Response> {
    const target = session.target ?? this.first;
    return this.http.request({
      method,
      target,
      // Handed back with the response: where it went, should the upstream refuse it (sentTo).
      opaque: new Sent(this.name, method, target),
      principal: session.principal,
      headers,
      body,
      signal,
      bodyTimeout: how & LONG_LIVED ? 0 : undefined,
      movable: (how & MOVABLE) !== 0,
    });
  }

  /** A POST read by `handler` as it comes (UpstreamHttp.dispatch); `how` as for send(). */
  post(
    session: Pick<SessionRef, 'target' | 'principal'>,
    headers: Record<string, string>,
    body: string,
    handler: Handler,
    how = 0,
  ): void {
    this.http.dispatch(
      {
        method: 'POST',
        target: session.target ?? this.first,
        principal: session.principal,
        headers,
        body,
        bodyTimeout: how & LONG_LIVED ? 0 : undefined,
        movable: (how & MOVABLE) !== 0,
      },
      handler,
    );
  }
}
