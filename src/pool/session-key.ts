// The identity of a pooled upstream session: (upstream, principal hash, capability fingerprint).
// Two requests share an upstream session only when all three are equal.

import { createHash } from 'node:crypto';
import { canonicalJson, toLegacyClientCapabilities } from '../dialect/index.js';
import { capabilitiesText } from '../envelope/index.js';
import type { JsonObject } from '../jsonrpc.js';

export interface SessionKey {
  /** The store key: safe to persist, carries no raw principal. */
  id: string;
  upstream: string;
  principalHash: string;
  /** What Causeway declares upstream at initialize. */
  legacyCapabilities: JsonObject;
}

interface Declared {
  legacyCapabilities: JsonObject;
  fingerprint: string;
}

/**
 * Clients send the same few capability objects again and again: their translation and hash are
 * remembered by the request's own JSON text (small ones only, a bounded number).
 */
const declared = new Map<string, Declared>();
const MAX_REMEMBERED = 256;
const MAX_REMEMBERED_TEXT = 2048;

function declaredOf(clientCapabilities: JsonObject): Declared {
  const text = capabilitiesText(clientCapabilities);
  const known = declared.get(text);
  if (known) return known;
  const legacyCapabilities = Object.freeze(toLegacyClientCapabilities(clientCapabilities));
  const fingerprint = createHash('sha256').update(canonicalJson(legacyCapabilities)).digest('base64url').slice(0, 16);
  const d = { legacyCapabilities, fingerprint };
  if (text.length <= MAX_REMEMBERED_TEXT) {
    if (declared.size >= MAX_REMEMBERED) declared.delete(declared.keys().next().value!);
    declared.set(text, d);
  }
  return d;
}

export function sessionKey(upstream: string, principalHash: string, clientCapabilities: JsonObject): SessionKey {
  const { legacyCapabilities, fingerprint } = declaredOf(clientCapabilities);
  return { id: `${upstream}|${principalHash}|${fingerprint}`, upstream, principalHash, legacyCapabilities };
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
