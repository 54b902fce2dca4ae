// The URL-mode rounds: a call whose upstream wants the user to sign in, and a 2025-11-25 -32042
// (URL elicitation required), both put to a 2026 client as one url-mode input_required round
// whose retry re-issues the call.

import { declares } from '../dialect/index.js';
import { causewayError } from '../errors.js';
import { isErrorResponse, isObject, type JsonObject } from '../jsonrpc.js';
import { activeTraceparent } from '../tracing/index.js';
import { toAsk } from './asks.js';
import { paramsDigest } from './request-state.js';
import type { BridgeDeps, RoundExchange, RoundResult } from './call.js';

/**
 * A call whose upstream wants the user's own token, which Causeway does not hold yet: one URL-mode
 * round pointing at the sign-in link, as an upstream's own -32042 would be; its retry re-issues
 * the call, which then carries the token the sign-in gave.
 */
export function signInRound(
  ex: Pick<RoundExchange, 'request' | 'principal'>,
  deps: BridgeDeps,
  url: string,
  message: string,
): RoundResult & { kind: 'input' } {
  const elicitations = [{ mode: 'url', url, message }];
  return <RoundResult & { kind: 'input' }>urlElicitationRound(ex, deps, {
    kind: 'upstream',
    response: { jsonrpc: '2.0', id: 0, error: { code: -32042, message, data: { elicitations } } },
  });
}

/**
 * A 2025-11-25 `-32042` (URL elicitation required) never reaches a 2026 client [BASE]: with
 * elicitation.url declared it becomes a url-mode round whose retry re-issues the call; without
 * it, -32021.
 */
export function urlElicitationRound(
  ex: Pick<RoundExchange, 'request' | 'principal'>,
  deps: BridgeDeps,
  r: RoundResult,
): RoundResult {
  if (r.kind !== 'upstream' || !isErrorResponse(r.response) || r.response.error.code !== -32042) return r;
  const data = r.response.error.data;
  const elicitations = isObject(data) && Array.isArray(data.elicitations) ? data.elicitations.filter(isObject) : [];
  const required = { elicitation: { url: {} } };
  if (!declares(ex.request.meta.clientCapabilities, required)) {
    throw causewayError(
      'missing_client_capability',
      'The upstream needs URL elicitation, which this request did not declare',
      {
        requiredCapabilities: required,
      },
    );
  }
  if (elicitations.length === 0)
    throw causewayError('upstream_bad_response', 'URL elicitation required, but no URL given');
  const inputRequests: JsonObject = {};
  const taken = new Set<string>();
  for (const [i, el] of elicitations.entries()) {
    const ask = toAsk({ jsonrpc: '2.0', id: i, method: 'elicitation/create', params: { ...el, mode: 'url' } }, taken);
    taken.add(ask.key);
    inputRequests[ask.key] = ask.input;
  }
  const requestState = deps.sealer.seal({
    p: ex.principal,
    m: ex.request.method,
    d: paramsDigest(ex.request.params),
    c: '',
    r: 1,
    h: deps.replicaId,
    e: Date.now() + deps.stateTtlMs,
    x: activeTraceparent(),
  });
  return { kind: 'input', result: { resultType: 'input_required', inputRequests, requestState } };
}
