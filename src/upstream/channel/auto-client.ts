// `upstream.transport: auto`: an upstream client that finds the upstream's transport at its first
// use (detect-transport.ts), builds the client for it once, then hands it every call. Detection
// waits for a session to be needed, so Causeway starts while the upstream is down; concurrent
// callers share one probe, and a failed probe fails those callers and is tried again by the next.

import { CausewayError } from '../../errors.js';
import type { JsonRpcNotification, JsonRpcResponse } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import type { Dispatcher } from '../http/index.js';
import { detectTransport, type Detected, type LegacyTransport, type TransportMemo } from './detect-transport.js';
import type { HandshakeResult, InitializeParams, SessionRef, UpstreamSessionClient } from '../core/index.js';

export interface AutoClientOptions {
  url: string;
  /** Shared by the upstreams of one app: a URL is probed once. */
  memo: TransportMemo;
  /** Configured `upstream.headers`, sent on the probes too. */
  headers?: Record<string, string>;
  connectTimeoutMs: number;
  /** Bounds each probe request. */
  probeTimeoutMs: number;
  log: Logger;
  /** The upstream's composed client, for the probes; without one each probe makes its own. */
  dispatcher?: Dispatcher;
  /** The client for what was found; called once. */
  build(found: Detected): UpstreamSessionClient;
}

/** The transport found and the client speaking it. */
export interface FoundTransport {
  transport: LegacyTransport;
  client: UpstreamSessionClient;
}

function closedError(): CausewayError {
  return new CausewayError('upstream_unavailable', 'Upstream client is closed');
}

/** `p`, or the caller's abort reason as soon as `signal` aborts (the shared probe goes on). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export class AutoClient implements UpstreamSessionClient {
  private found: FoundTransport | undefined;
  private closed = false;

  constructor(private readonly opts: AutoClientOptions) {}

  /** The transport found, once it is. */
  get transport(): FoundTransport['transport'] | undefined {
    return this.found?.transport;
  }

  /** The transport and its client, probing first when not known yet. */
  async use(signal?: AbortSignal): Promise<FoundTransport> {
    if (this.found) return this.found;
    if (this.closed) throw closedError();
    const { url, memo, headers, connectTimeoutMs, probeTimeoutMs, log, dispatcher } = this.opts;
    const detected = await untilAborted(
      detectTransport(url, { memo, log, headers, connectTimeoutMs, timeoutMs: probeTimeoutMs, dispatcher }),
      signal,
    );
    if (this.closed) throw closedError();
    this.found ??= { transport: detected.transport, client: this.opts.build(detected) };
    return this.found;
  }

  // Sessions exist only once the transport is known; before that, every place is admitted.
  admits(target: string | undefined): boolean {
    return this.found?.client.admits(target) ?? true;
  }

  targetIndex(target: string | undefined): number {
    return this.found?.client.targetIndex(target) ?? 0;
  }

  hasStandaloneStream(): boolean {
    return this.found?.client.hasStandaloneStream?.() ?? false;
  }

  endsHere(target: string | undefined): boolean {
    return this.found?.client.endsHere?.(target) ?? false;
  }

  async initialize(params: InitializeParams, signal?: AbortSignal, principal?: string): Promise<HandshakeResult> {
    return (await this.use(signal)).client.initialize(params, signal, principal);
  }

  // The caller's signal, where there is one, bounds its wait for the probe too.
  async request(...args: Parameters<UpstreamSessionClient['request']>): Promise<JsonRpcResponse> {
    return (await this.use(args[3])).client.request(...args);
  }

  async resumeCall(...args: Parameters<UpstreamSessionClient['resumeCall']>): Promise<JsonRpcResponse> {
    return (await this.use(args[4])).client.resumeCall(...args);
  }

  async notify(session: SessionRef, n: JsonRpcNotification): Promise<void> {
    return (await this.use()).client.notify(session, n);
  }

  async respond(session: SessionRef, r: JsonRpcResponse): Promise<void> {
    return (await this.use()).client.respond(session, r);
  }

  async openStream(
    ...args: Parameters<UpstreamSessionClient['openStream']>
  ): Promise<'unsupported' | { done: Promise<void> }> {
    return (await this.use(args[2])).client.openStream(...args);
  }

  async terminate(session: SessionRef): Promise<void> {
    await this.found?.client.terminate(session);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.found?.client.close();
  }

  async destroy(): Promise<void> {
    this.closed = true;
    await this.found?.client.destroy();
  }
}
