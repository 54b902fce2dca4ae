// Where a retry carrying a requestState is served (RetryVia): its state is opened and checked
// against this request first; then its call is the one held here (held), or its holder elsewhere
// serves it (handoff: serveHandedRounds on that replica), or, the holder gone, the call is taken
// up on its upstream stream (resume) or started again from this retry's answers (replay). A
// url-mode state re-issues the call (reissue). Running the call is call.ts's.

import { setTimeout as delay } from 'node:timers/promises';
import { causewayError, type CausewayError } from '../errors.js';
import type { JsonObject, JsonRpcResponse } from '../jsonrpc.js';
import { ResumeRefusedError, SessionExpiredError, type SessionRef } from '../upstream/index.js';
import { activeTraceparent, inRemoteSpan, linkTo } from '../tracing/index.js';
import { nextRound, start, type BridgeDeps, type ReplicaBridge, type RoundExchange, type RoundResult } from './call.js';
import type { RetryVia } from '../metrics/index.js';
import type { ForwardedRound, HandedResult } from './handoff.js';
import type { PendingCall, RoundListener } from './holder.js';
import { sessionDigest, type StateClaims } from './request-state.js';

/**
 * How long a retry keeps trying to reach a holder that is alive but cut off: longer than a Redis failover (2-4 s
 * measured).
 */
const HOLDER_REACH_MS = 15_000;
const HANDOFF_RETRY_MS = 250;

const sleep = (ms: number, signal: AbortSignal) => delay(ms, undefined, { signal });

export function invalid(message: string): CausewayError {
  return causewayError('invalid_params', message);
}

/**
 * Where a retry goes on: the replica holding the call served the round (handoff), or the call
 * goes on here with this retry's answers, `pending` when it is held here or was taken up on its
 * upstream stream, else sent again (replayed in place of held call `replayOf`, or re-issued).
 */
export type Retry =
  | { via: 'handoff'; result: RoundResult }
  | { via: Exclude<RetryVia, 'handoff'>; pending?: PendingCall; replayOf?: string };

/**
 * Opens and checks the request's requestState (-32602 when it is not this request's, expired or
 * used) and finds where its call is. Holder gone: this state may resume or start one replay on
 * this replica, not more.
 */
export async function routeRetry(
  ex: RoundExchange,
  session: SessionRef,
  deps: BridgeDeps,
  responses: Record<string, JsonObject>,
  digestOf: () => string,
): Promise<Retry> {
  const { request } = ex;
  const state = request.params.requestState;
  if (typeof state !== 'string') throw invalid('requestState must be a string');
  const claims = deps.sealer.open(state);
  if (!claims) throw invalid('requestState is not valid');
  if (claims.p !== ex.principal || claims.m !== request.method || claims.d !== digestOf()) {
    throw invalid('requestState does not belong to this request');
  }
  if (claims.e <= Date.now()) throw invalid('requestState has expired');
  ex.onRetry?.(claims.r);
  if (claims.x !== undefined) linkTo(claims.x, 'previous_round');
  if (claims.c === '') return { via: 'reissue' };
  if (deps.held.wasFinished(claims.c)) throw invalid('requestState was already used');
  let pending = deps.held.get(claims.c);
  if (pending && (pending.round !== claims.r || pending.busy)) throw invalid('requestState was already used');
  // The upstream dropped the held call while it waited on the client (session lost, deadline): replay it.
  if (pending?.lost) {
    deps.held.release(pending);
    pending = undefined;
  }
  if (pending) return { via: 'held', pending };
  const handoff = claims.h !== deps.replicaId ? deps.handoff : undefined;
  // The holder's round runs under the state's TTL (serveHandedRounds); past it, and a margin, it is gone.
  const handOver = () =>
    handoff!.forward(
      claims.h,
      { callId: claims.c, round: claims.r, inputResponses: responses, traceparent: activeTraceparent() },
      ex.signal,
      deps.stateTtlMs + deps.upstreamTimeoutMs,
    );
  if (handoff) {
    const handed = await handOver();
    if (handed !== 'unreachable') return { via: 'handoff', result: fromHanded(handed) };
    ex.log.info('the replica holding this call did not answer; taking the call up here');
  }
  if (deps.held.wasFinished(claims.c)) throw invalid('requestState was already used');
  deps.held.remember(claims.c, claims.e);
  let resumed = await resumeCall(ex, session, deps, digestOf, claims);
  // The upstream keeps the call's stream attached elsewhere: its holder is alive, but the
  // handoff did not reach it (Redis failing over). Hand it over again once that passes.
  for (const until = Date.now() + HOLDER_REACH_MS; resumed === 'conflict' && handoff && Date.now() < until; ) {
    await sleep(HANDOFF_RETRY_MS, ex.signal);
    const handed = await handOver();
    if (handed !== 'unreachable') return { via: 'handoff', result: fromHanded(handed) };
    resumed = await resumeCall(ex, session, deps, digestOf, claims);
  }
  if (resumed === 'conflict') throw invalid('requestState was already used');
  if (resumed !== undefined) return { via: 'resume', pending: resumed };
  cancelOriginal(ex, session, deps, claims);
  return { via: 'replay', replayOf: claims.c };
}

/**
 * A replay starts the call again: the original, left running upstream by its lost holder, is
 * cancelled (notifications/cancelled under its id) when it runs on this request's session. On
 * another session (the pool replaced it) it cannot be reached, and is most likely gone with it.
 */
function cancelOriginal(ex: RoundExchange, session: SessionRef, deps: BridgeDeps, claims: StateClaims): void {
  const at = claims.u ?? claims.o;
  if (at === undefined || session.sessionId === undefined || sessionDigest(session.sessionId) !== at.s) return;
  const cancel = {
    jsonrpc: '2.0' as const,
    method: 'notifications/cancelled',
    params: { requestId: at.i, reason: 'replayed elsewhere' },
  };
  deps.client
    .notify(session, cancel)
    .catch((err: unknown) => ex.log.debug({ err }, 'cancelling the replayed call upstream failed'));
}

function fromHanded(h: HandedResult): RoundResult {
  return h.kind === 'upstream' ? { kind: 'upstream', response: h.response as unknown as JsonRpcResponse } : h;
}

/** The holder's side of a handed-over retry: the same round logic, results sent back over the bus. */
export function serveHandedRounds(
  deps: ReplicaBridge & { upstreamTimeoutMs: number },
): (round: ForwardedRound) => Promise<HandedResult | 'missing'> {
  return ({ callId, round, inputResponses, traceparent }) =>
    inRemoteSpan(traceparent, 'causeway.mrtr.handed_round', { 'causeway.mrtr.round': round }, async () => {
      if (deps.held.wasFinished(callId)) throw invalid('requestState was already used');
      const pending = deps.held.get(callId);
      if (!pending) return 'missing';
      if (pending.round !== round || pending.busy) throw invalid('requestState was already used');
      pending.stopTimer();
      pending.answer(inputResponses);
      const quiet: RoundListener = { onProgress: () => undefined, onLog: () => undefined };
      const r = await nextRound(pending, deps, quiet, AbortSignal.timeout(deps.stateTtlMs));
      return r.kind === 'upstream' ? { kind: 'upstream', response: r.response as unknown as JsonObject } : r;
    });
}

/**
 * Takes up a call whose holder is gone on its upstream stream (GET + Last-Event-ID after the
 * event before its first outstanding ask). The call, once the resumed stream carries one of those
 * asks (or its response); 'conflict' when the stream stays attached elsewhere (another replica
 * resumed this state); undefined when it cannot be resumed and nothing was sent upstream, so it
 * is replayed instead.
 */
async function resumeCall(
  ex: RoundExchange,
  session: SessionRef,
  deps: BridgeDeps,
  digestOf: () => string,
  claims: StateClaims,
): Promise<PendingCall | 'conflict' | undefined> {
  const at = claims.u;
  if (at === undefined || session.sessionId === undefined || sessionDigest(session.sessionId) !== at.s)
    return undefined;
  let attached!: () => void;
  const carried = new Promise<'carried'>((resolve) => (attached = () => resolve('carried')));
  const pending = start(ex, session, deps, digestOf, { at, attached });
  pending.round = claims.r;
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), deps.upstreamTimeoutMs)));
  const left = new Promise<'left'>((resolve) => {
    if (ex.signal.aborted) resolve('left');
    else ex.signal.addEventListener('abort', () => resolve('left'), { once: true });
  });
  const first = await Promise.race([carried, pending.over.then(() => 'over' as const), gaveUp, left]);
  clearTimeout(timer);
  if (first === 'carried' || (first === 'over' && pending.failure === undefined)) return pending;
  if (first === 'left') {
    pending.cancel();
    throw ex.signal.reason;
  }
  const failure = pending.failure;
  // Nothing was answered upstream yet: let the stream go without cancelling, and replay.
  pending.detach();
  if (failure instanceof ResumeRefusedError && failure.httpStatus === 409) return 'conflict';
  if (failure instanceof SessionExpiredError) {
    // The pool opens a new session and runs the round again, which replays the call there.
    deps.held.forget(claims.c);
    throw failure;
  }
  ex.log.info({ err: failure, why: first }, 'the held call could not be resumed on its upstream stream; replaying it');
  return undefined;
}
