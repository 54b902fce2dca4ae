// Who is asking, as pools, rates, subscriptions, tasks and session bindings key on it: an upstream
// session is never shared between principals. The principal is kept only as an HMAC under a
// configured secret; raw tokens go nowhere. With a resource server, it is the verified token's
// issuer and subject, whatever token carries them. Hashed once per request, at the front door (by
// the resource server for a verified token), and carried with the request from there.

import { createHmac } from 'node:crypto';
import type { HeaderBag } from '../envelope/index.js';
import type { PrincipalMode } from '../config/index.js';
import type { Identity } from './grant.js';

export const ANONYMOUS = 'anonymous';

export interface PrincipalPolicy {
  mode: PrincipalMode;
  header: string;
  hashSecret: string;
}

/** `identity`: the verified token's, when the request was authenticated; principal.mode is none then. */
export function principalHash(policy: PrincipalPolicy, headers: HeaderBag, identity?: Identity): string {
  if (identity) return keyed(policy.hashSecret, `oauth:${JSON.stringify([identity.issuer, identity.subject])}`);
  let raw: string | undefined;
  if (policy.mode === 'header') raw = headers[policy.header.toLowerCase()]?.trim();
  else if (policy.mode === 'bearer') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
    raw = m?.[1];
  }
  if (!raw) return ANONYMOUS;
  return keyed(policy.hashSecret, `${policy.mode}:${raw}`);
}

function keyed(secret: string, value: string): string {
  return createHmac('sha256', secret).update(value).digest('base64url').slice(0, 32);
}
