// The identity of a pooled upstream session: (upstream, principal hash, capability fingerprint).
// Two requests share an upstream session only when all three are equal.

import type { JsonObject } from '../jsonrpc.js';

export interface SessionKey {
  /** The store key: safe to persist, carries no raw principal. */
  id: string;
  upstream: string;
  principalHash: string;
  /** What Causeway declares upstream at initialize. */
  legacyCapabilities: JsonObject;
}

/**
 * The legacy capabilities Causeway declares for a client, and their fingerprint (dialect's declaredCapabilities makes
 * both).
 */
export interface DeclaredCapabilities {
  legacyCapabilities: JsonObject;
  fingerprint: string;
}

export function sessionKey(upstream: string, principalHash: string, declared: DeclaredCapabilities): SessionKey {
  return {
    id: `${upstream}|${principalHash}|${declared.fingerprint}`,
    upstream,
    principalHash,
    legacyCapabilities: declared.legacyCapabilities,
  };
}

/** The upstream name a key id starts with (names cannot contain `|`). */
export function upstreamOf(keyId: string): string {
  const bar = keyId.indexOf('|');
  return bar < 0 ? keyId : keyId.slice(0, bar);
}

/** The principal hash in a key id (hashes are base64url: no `|`). */
export function principalOf(keyId: string): string | undefined {
  return keyId.split('|')[1];
}

/** The principal of every upstream's scout session: a principal hash (base64url) never holds a `~`. */
export const SCOUT_PRINCIPAL = '~scout';

/** What a scout declares at initialize: everything a server may ask of a client. */
const SCOUT_CAPABILITIES: JsonObject = Object.freeze({
  roots: { listChanged: true },
  sampling: {},
  elicitation: { form: {}, url: {} },
});

/**
 * An upstream's scout session (subscriptions/standing.ts): Causeway's own, one key for every replica,
 * never a client's.
 */
export function scoutKey(upstream: string): SessionKey {
  return {
    id: `${upstream}|${SCOUT_PRINCIPAL}|scout`,
    upstream,
    principalHash: SCOUT_PRINCIPAL,
    legacyCapabilities: SCOUT_CAPABILITIES,
  };
}
