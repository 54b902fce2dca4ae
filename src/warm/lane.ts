// The warm lane: a modern tools/call or prompts/get on a legacy Streamable HTTP session this
// replica holds open, served as one straight path. The checks are plain calls on what the front
// door already read, the session is taken from the pool with no await, and one WarmCall (call.ts)
// sends the legacy request, reads its answer as it comes and writes the reply. A request it
// cannot serve that way (a retry, progress or logs asked for, a task, a cold or ejected session,
// a tool whose headers or task support are not known yet, tracing on, an upstream that may speak
// 2026-07-28) is left to the pipeline, untouched.

import { Deadlines } from '../deadlines.js';
import { checkParamHeaders, mayNeedParamHeaders, type ModernRequest } from '../envelope/index.js';
import { isObject } from '../jsonrpc.js';
import type { PooledSession } from '../pool/index.js';
import { sessionKeyFor, type ModernDeps, type MountFront } from '../routing/index.js';
import { plainCall } from '../tasks/index.js';
import { tracingOn } from '../tracing/index.js';
import type { UpstreamClient } from '../upstream/index.js';
import { WarmCall } from './call.js';
import type { Fallback, WarmExchange, WarmUpstream } from './exchange.js';

export class WarmLane implements WarmUpstream {
  private due: Deadlines | undefined = undefined;

  constructor(
    readonly deps: ModernDeps,
    readonly client: UpstreamClient,
    /** The mount's skills folder: a method it serves is never the lane's. */
    private readonly front?: MountFront,
  ) {}

  /** One list and one timer for the deadlines of all its calls, made with the first. */
  get deadlines(): Deadlines {
    return (this.due ??= new Deadlines(this.deps.bridge.upstreamTimeoutMs));
  }

  /** Serves `request` when it is a warm call, and says so; false, having done nothing, when not. */
  take<X extends WarmExchange>(ex: X, request: ModernRequest, fallback: Fallback<X>): boolean {
    const { deps } = this;
    const { spec, params, meta } = request;
    if (
      !spec.multiRound ||
      spec.task ||
      spec.cacheable ||
      params.requestState !== undefined ||
      params.inputResponses !== undefined
    )
      return false;
    if (
      meta.progressToken !== undefined ||
      meta.logLevel !== undefined ||
      tracingOn() ||
      this.front?.serves(request.method)
    )
      return false;
    if (deps.modern !== undefined && deps.modern.era.current !== 'legacy') return false;
    const key = sessionKeyFor(deps.upstreamName, ex.principal, meta.clientCapabilities);
    const session = deps.pool.warm(key);
    if (session === undefined || !this.servable(ex, request, session)) return false;
    deps.pool.touch(session);
    new WarmCall(this, ex, request, session, fallback).send();
    return true;
  }

  /** What the pipeline would check before sending, all known now and all passed. */
  private servable(ex: WarmExchange, request: ModernRequest, session: PooledSession): boolean {
    const capability = request.spec.capability;
    const advertised = session.record.initializeResult.capabilities;
    if (capability && !(isObject(advertised) && isObject(advertised[capability]))) return false;
    if (request.method !== 'tools/call') return true;
    const args = isObject(request.params.arguments) ? request.params.arguments : undefined;
    const { facts } = session;
    const params = facts.toolHeaders(request.name!);
    // Not known to have annotations: checked once the session's tools were read, or needing none.
    if (
      params === undefined
        ? !facts.knows(request.name!) && mayNeedParamHeaders(ex.headers, args)
        : !checkParamHeaders(ex.headers, params, args).ok
    )
      return false;
    return plainCall(this.deps, session, request);
  }
}
