// Multi-round bridge [MRTR]: tools/call, prompts/get and resources/read relayed so that a
// legacy server's mid-call asks (elicitation, sampling, roots) become input_required rounds.
// The upstream call is held open between rounds; answers given up front, or on a retry, are
// passed upstream by key. A retry whose holder is gone takes the call up on its upstream stream
// (GET + Last-Event-ID) when the state says where it stood; otherwise it replays the call and
// answers the repeated questions from the responses the client already gave. Where a retry is
// served is retry.ts's to decide; running the call and sealing its rounds, call.ts's.

import { isObject, type JsonObject } from '../jsonrpc.js';
import type { SessionRef } from '../upstream/index.js';
import { listenerFor, nextRound, start, type BridgeDeps, type RoundExchange, type RoundResult } from './call.js';
import { urlElicitationRound } from './url-rounds.js';
import type { PendingCall } from './holder.js';
import { paramsDigest } from './request-state.js';
import { invalid, routeRetry } from './retry.js';

function readResponses(params: JsonObject): Record<string, JsonObject> {
  const v = params.inputResponses;
  if (v === undefined) return {};
  if (!isObject(v)) throw invalid('inputResponses must be an object');
  const out: Record<string, JsonObject> = {};
  for (const [k, r] of Object.entries(v)) if (isObject(r)) out[k] = r;
  return out;
}

/**
 * One round of a multi-round request: the first, or a retry's (wherever its call is), until the next round or the
 * result.
 */
export async function runRound(ex: RoundExchange, session: SessionRef, deps: BridgeDeps): Promise<RoundResult> {
  const { request } = ex;
  const responses = readResponses(request.params);
  // Most calls never ask: the digest (a canonical walk of every argument) is made only when needed.
  let digest: string | undefined;
  const digestOf = () => (digest ??= paramsDigest(request.params));
  let pending: PendingCall | undefined;
  let replayOf: string | undefined;

  if (request.params.requestState !== undefined) {
    const retry = await routeRetry(ex, session, deps, responses, digestOf);
    deps.onRetry?.(request.method, retry.via);
    if (retry.via === 'handoff') return urlElicitationRound(ex, deps, retry.result);
    pending = retry.pending;
    replayOf = retry.replayOf;
  }

  if (pending) {
    pending.stopTimer();
    pending.answer(responses);
  } else {
    pending = start(ex, session, deps, digestOf);
    pending.replayOf = replayOf;
    pending.answer(responses);
  }
  return urlElicitationRound(ex, deps, await nextRound(pending, deps, listenerFor(ex), ex.signal));
}
