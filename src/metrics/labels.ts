// The label values of Causeway's metrics: closed sets, declared here, which the stages that record
// them use (a token's failure, a cache drop, a retry's way, an outside ask's end). Declared by
// the metrics so that metrics/ sits near the ground and no label takes a type from a stage.

/** Why a token was refused: a closed set, a metric label and a log field, never a token or claim value. */
export const AUTH_FAILURES = [
  'missing_token',
  'malformed_token',
  'bad_signature',
  'unknown_key',
  'disallowed_algorithm',
  'expired',
  'not_yet_valid',
  'wrong_issuer',
  'wrong_audience',
  'missing_subject',
  // Bound to a key (cnf, RFC 9449 / RFC 8705) yet sent as a plain bearer token, or bound by a means not checked here.
  'bound_token',
  // DPoP [RFC 9449]: the proof unreadable or badly signed, for another method or URL, outside the
  // window, for another token, by another key than cnf.jkt, seen before; an unbound token under the
  // DPoP scheme; Bearer when auth.dpop is required; the DPoP scheme when it is off.
  'dpop_invalid_proof',
  'dpop_wrong_target',
  'dpop_stale',
  'dpop_wrong_token',
  'dpop_key_mismatch',
  'dpop_replayed',
  // auth.dpopNonces: the proof carries no nonce Causeway issued lately (the client retries with DPoP-Nonce).
  'dpop_nonce',
  'dpop_unbound_token',
  'dpop_required',
  'dpop_off',
  'inactive',
  'unavailable',
  'insufficient_scope',
] as const;

export type AuthFailure = (typeof AUTH_FAILURES)[number];

/** What the gateway cache scopes an entry to: everyone, or one principal (and token). */
export type CacheScope = 'public' | 'private';

/** Why a kept entry left the cache. */
export type DropReason = 'invalidated' | 'evicted' | 'expired';

/** What the cache tells the metrics. */
export interface CacheRecorder {
  hit(method: string, scope: CacheScope): void;
  miss(method: string): void;
  dropped(method: string, scope: CacheScope, why: DropReason): void;
}

/**
 * How a multi-round retry found its call. held: the call is held here; handoff: sent to the
 * replica holding it; resume: holder gone, the call taken up on its upstream stream; replay:
 * holder gone, the call sent again; reissue: a url-mode retry.
 */
export type RetryVia = 'held' | 'handoff' | 'resume' | 'replay' | 'reissue';

/** Where an ask from the GET stream went: to the one asking call here, to it on another replica, or nowhere. */
export type OutsideAskOutcome = 'given' | 'handed' | 'refused';
