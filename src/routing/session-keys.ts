// The pooled-session key of a request: its upstream, its principal's hash and the legacy
// capabilities its client declared, as dialect translates them. Composed here, above both, so
// that the pool keys sessions without knowing how capabilities translate.

import { declaredCapabilities, type Declared } from '../dialect/index.js';
import type { JsonObject } from '../jsonrpc.js';
import { sessionKey, type SessionKey } from '../pool/index.js';

/** The key last made, and the capabilities it was made for: a client's requests in a row share all three. */
let last: SessionKey | undefined;
let lastDeclared: Declared | undefined;

export function sessionKeyFor(upstream: string, principalHash: string, clientCapabilities: JsonObject): SessionKey {
  const declared = declaredCapabilities(clientCapabilities);
  if (
    last !== undefined &&
    declared === lastDeclared &&
    last.upstream === upstream &&
    last.principalHash === principalHash
  )
    return last;
  lastDeclared = declared;
  last = sessionKey(upstream, principalHash, declared);
  return last;
}
