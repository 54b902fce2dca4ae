// One upstream's HTTP client: one undici Agent (connect, header and body timeouts) and the
// interceptors every request to the upstream's own URLs passes, composed once with
// Dispatcher.compose. Outermost first: the trace context (trace.ts), the upstream's credential
// and its one 401 retry (credentials.ts), the URL's health and failover (targets.ts), then the
// socket. undici's request() enters the chain through entry.ts. The Streamable HTTP session
// client, the legacy passthrough, the HTTP+SSE channel and the transport probe of an upstream all
// send through the one client; requests that name no URL of the upstream's (an HTTP+SSE stream,
// a probe) pass the interceptors untouched.

import type { UpstreamAuthorization } from '../../credentials/index.js';
import type { TargetSet } from '../../core/index.js';
import { credentialsInterceptor } from './credentials.js';
import { Agent, type Dispatcher, type Handler, type Response, type UpstreamRequest } from './dispatch.js';
import { RequestEntry } from './entry.js';
import { targetsInterceptor } from './targets.js';
import { traceInterceptor } from './trace.js';

export interface UpstreamHttpOptions {
  connectTimeoutMs: number;
  /** The header and body timeout of a request that sets none; undici's own without. */
  requestTimeoutMs?: number;
  /** The upstream's name and URLs, and the credential its requests carry (none without). */
  upstream?: { name: string; targets: TargetSet; credentials?: UpstreamAuthorization };
}

export class UpstreamHttp {
  /** The composed client, for callers that take an undici Dispatcher. */
  readonly dispatcher: Dispatcher;
  /** The interceptors and the socket, without request()'s entry: what dispatch() sends on. */
  private readonly chain: Dispatcher;
  private readonly agent: Agent;

  constructor(options: UpstreamHttpOptions) {
    const timeout =
      options.requestTimeoutMs === undefined ? undefined : Math.max(1, Math.ceil(options.requestTimeoutMs));
    this.agent = new Agent({
      connect: { timeout: Math.max(1, Math.ceil(options.connectTimeoutMs)) },
      ...(timeout === undefined ? {} : { headersTimeout: timeout, bodyTimeout: timeout }),
    });
    const u = options.upstream;
    // compose() wraps in the order given: the last interceptor runs first.
    this.chain = u
      ? this.agent.compose([
          targetsInterceptor(u.name, u.targets),
          ...(u.credentials ? [credentialsInterceptor(u.credentials)] : []),
          traceInterceptor(),
        ])
      : this.agent;
    this.dispatcher = u ? new RequestEntry(this.chain) : this.agent;
  }

  /**
   * Sends `req` through the interceptors to `handler`, which reads the answer as it comes: no body
   * stream, no promise, and the headers parsed once. May throw at once (a URL not the upstream's).
   */
  dispatch(req: UpstreamRequest, handler: Handler): void {
    this.chain.dispatch(req as Dispatcher.DispatchOptions, handler);
  }

  /** Sends `req`; its promise is undici's own (no wrapper per request). */
  request(req: UpstreamRequest): Promise<Response> {
    return this.dispatcher.request(req as Dispatcher.RequestOptions<unknown>);
  }

  /** Lets requests in flight finish, then closes the sockets. */
  close(): Promise<void> {
    return this.agent.close().catch(() => undefined);
  }

  destroy(): Promise<void> {
    return this.agent.destroy().catch(() => undefined);
  }
}
