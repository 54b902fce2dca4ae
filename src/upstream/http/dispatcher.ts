// The legacy Streamable HTTP requests of one upstream's sessions: the headers of each kind of
// exchange, and the request itself, to the session's URL (the first when it has none) with its
// principal's credential, sent through the upstream's composed client (compose/), which owns
// the sockets, the credential, the URLs' health and the trace context. Also how a refusal reads.

import { CausewayError } from '../../errors.js';
import type { JsonRpcErrorResponse } from '../../jsonrpc.js';
import { readText } from './body.js';
import { upstreamHeaders, type SessionRef, type TargetSet, type UpstreamRequestKind } from '../core/index.js';
import { decodeMessages } from './messages.js';
import type { Handler, Response, UpstreamHttp } from './compose/index.js';

export type { Response } from './compose/index.js';

/** A long-lived request (a stream, a patient call): no idle body timeout. */
export const LONG_LIVED = 1;
/** Failing to reach the target is a TargetUnreachableError: nothing was sent, so the pool moves the session. */
export const MOVABLE = 2;

const ERROR_BODY_LIMIT = 64 * 1024;

/** `rpc`: the JSON-RPC error the upstream gave, kept as the cause (a -32022 is an era refusal). */
export function httpRefusal(status: number, detail?: string, rpc?: unknown): CausewayError {
  return new CausewayError('upstream_unavailable', `Upstream answered HTTP ${status}${detail ? `: ${detail}` : ''}`, undefined, rpc === undefined ? undefined : { cause: rpc });
}

/** The JSON-RPC error in an upstream's error body, if it has one. */
export async function readErrorBody(res: Response): Promise<JsonRpcErrorResponse | undefined> {
  try {
    const [m] = decodeMessages(await readText(res.body, ERROR_BODY_LIMIT));
    return m?.kind === 'response' && 'error' in m.message ? m.message : undefined;
  } catch {
    res.body.destroy();
    return undefined;
  }
}

/** A non-2xx answer as a refusal, with the upstream's own error message when it sent one. */
export async function refusalOf(res: Response): Promise<CausewayError> {
  const rpc = await readErrorBody(res);
  return httpRefusal(res.statusCode, rpc?.error.message.slice(0, 200), rpc?.error);
}

export class UpstreamDispatcher {
  private readonly first: string;

  constructor(
    private readonly http: UpstreamHttp,
    targets: TargetSet,
    private readonly configured: Record<string, string> | undefined,
  ) {
    this.first = targets.at(0)!;
  }

  headers(kind: UpstreamRequestKind, session: SessionRef | undefined, extra?: Record<string, string>, lastEventId?: string): Record<string, string> {
    return upstreamHeaders(kind, session, this.configured, extra, lastEventId);
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
    return this.http.request({
      method,
      target: session.target ?? this.first,
      principal: session.principal,
      headers,
      body,
      signal,
      bodyTimeout: how & LONG_LIVED ? 0 : undefined,
      movable: (how & MOVABLE) !== 0,
    });
  }

  /** A POST read by `handler` as it comes (UpstreamHttp.dispatch); `how` as for send(). */
  post(session: Pick<SessionRef, 'target' | 'principal'>, headers: Record<string, string>, body: string, handler: Handler, how = 0): void {
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
