// The pooled-session key of a request: its upstream, its principal's hash and the legacy
// capabilities its client declared, as dialect translates them. Composed here, above both, so
// that the pool keys sessions without knowing how capabilities translate.

import { declaredCapabilities } from '../dialect/index.js';
import type { JsonObject } from '../jsonrpc.js';
import { sessionKey, type SessionKey } from '../pool/index.js';

export function sessionKeyFor(upstream: string, principalHash: string, clientCapabilities: JsonObject): SessionKey {
  return sessionKey(upstream, principalHash, declaredCapabilities(clientCapabilities));
}
