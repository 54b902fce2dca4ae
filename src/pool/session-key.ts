// The identity of a pooled upstream session: (upstream, principal hash, capability fingerprint).
// Two requests share an upstream session only when all three are equal.

import { createHash } from 'node:crypto';
import { canonicalJson, toLegacyClientCapabilities } from '../dialect/capabilities.js';
import type { JsonObject } from '../jsonrpc.js';

export interface SessionKey {
  /** The store key: safe to persist, carries no raw principal. */
  id: string;
  upstream: string;
  principalHash: string;
  /** What Causeway declares upstream at initialize. */
  legacyCapabilities: JsonObject;
}

export function sessionKey(upstream: string, principalHash: string, clientCapabilities: JsonObject): SessionKey {
  const legacyCapabilities = toLegacyClientCapabilities(clientCapabilities);
  const fingerprint = createHash('sha256').update(canonicalJson(legacyCapabilities)).digest('base64url').slice(0, 16);
  return { id: `${upstream}|${principalHash}|${fingerprint}`, upstream, principalHash, legacyCapabilities };
}

/** The upstream name a key id starts with (names cannot contain `|`). */
export function upstreamOf(keyId: string): string {
  const bar = keyId.indexOf('|');
  return bar < 0 ? keyId : keyId.slice(0, bar);
}
