// The HTTP hop to one upstream: one undici Agent (connect, header and body timeouts), the
// upstream's URLs parsed once, and the request headers of each kind of legacy exchange. Every
// legacy Streamable HTTP request Causeway makes goes through send(); this is where undici
// interceptors would go.

import { Agent, type Dispatcher } from 'undici';
import { CausewayError } from '../../errors.js';
import type { JsonRpcErrorResponse } from '../../jsonrpc.js';
import { readText } from './body.js';
import {
  TargetUnreachableError,
  upstreamHeaders,
  type SessionRef,
  type UpstreamRequestKind,
  neverDelivered,
  type TargetSet,
} from '../core/index.js';
import { decodeMessages } from './messages.js';
import type { UpstreamAuthorization } from '../credentials/index.js';
import { injectHeaders } from '../../tracing/index.js';

export type Response = Dispatcher.ResponseData;

export interface DispatcherEndpoint {
  name: string;
  targets: TargetSet;
  headers?: Record<string, string>;
  /** The Authorization this upstream gets: Causeway's own token, or the user's. */
  credentials?: UpstreamAuthorization;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
}

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
  private readonly agent: Agent;
  /** Origin and path of each target URL, parsed once. */
  private readonly parsed = new Map<string, { origin: string; path: string }>();

  constructor(private readonly endpoint: DispatcherEndpoint) {
    for (const u of endpoint.targets.urls) {
      const url = new URL(u);
      this.parsed.set(u, { origin: url.origin, path: `${url.pathname}${url.search}` });
    }
    const timeout = Math.max(1, Math.ceil(endpoint.requestTimeoutMs));
    this.agent = new Agent({
      connect: { timeout: Math.max(1, Math.ceil(endpoint.connectTimeoutMs)) },
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
  }

  headers(kind: UpstreamRequestKind, session: SessionRef | undefined, extra?: Record<string, string>, lastEventId?: string): Record<string, string> {
    return upstreamHeaders(kind, session, this.endpoint.headers, extra, lastEventId);
  }

  /**
   * Sends to the session's target (the first URL when it has none), with the upstream credential
   * of the session's principal. With `movable`, failing to reach the target is a
   * TargetUnreachableError: nothing was sent, so the pool moves the session.
   */
  async send(
    method: 'POST' | 'GET' | 'DELETE',
    session: Pick<SessionRef, 'target' | 'principal'>,
    headers: Record<string, string>,
    body: string | Uint8Array | undefined,
    signal: AbortSignal,
    how: { longLived?: boolean; movable?: boolean } = {},
  ): Promise<Response> {
    const { targets, name, credentials } = this.endpoint;
    const url = session.target ?? targets.at(0)!;
    const where = this.parsed.get(url);
    if (!where) throw new TargetUnreachableError(name, new Error('the session lives on a URL this upstream no longer lists'));
    // The active span (tracing on) is the upstream's parent; it replaces a forwarded client traceparent.
    injectHeaders(headers);
    for (let attempt = 1; ; attempt++) {
      const authorization = credentials && (await credentials.authorization(session.principal));
      let res: Response;
      try {
        res = await this.agent.request({
          origin: where.origin,
          path: where.path,
          method,
          headers: authorization === undefined ? headers : { ...headers, authorization },
          body,
          signal,
          ...(how.longLived ? { bodyTimeout: 0 } : {}),
        });
      } catch (err) {
        if (signal.aborted || !neverDelivered(err)) throw err;
        targets.failed(url);
        throw how.movable ? new TargetUnreachableError(name, err) : err;
      }
      targets.succeeded(url);
      // A 401 is the upstream refusing the token before doing anything (expired early, revoked,
      // its keys rotated, or the user has yet to sign in): one more try with a new one, or the
      // error the credential answers with.
      if (res.statusCode !== 401 || !credentials) return res;
      let retry: boolean;
      try {
        retry = await credentials.refused(session.principal, authorization, attempt === 2);
      } catch (err) {
        await res.body.dump().catch(() => undefined);
        throw err;
      }
      if (!retry) return res;
      await res.body.dump().catch(() => undefined);
    }
  }

  close(): Promise<void> {
    return this.agent.close().catch(() => undefined);
  }

  destroy(): Promise<void> {
    return this.agent.destroy().catch(() => undefined);
  }
}
