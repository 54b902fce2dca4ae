// Who is asking, for pooling only: an upstream session is never shared between principals.
// The principal is kept only as an HMAC under a configured secret; raw tokens go nowhere.

import { createHmac } from 'node:crypto';
import type { HeaderBag } from '../envelope/index.js';
import type { PrincipalMode } from '../config/index.js';

export const ANONYMOUS = 'anonymous';

export interface PrincipalPolicy {
  mode: PrincipalMode;
  header: string;
  hashSecret: string;
}

export function principalHash(policy: PrincipalPolicy, headers: HeaderBag): string {
  let raw: string | undefined;
  if (policy.mode === 'header') raw = headers[policy.header.toLowerCase()]?.trim();
  else if (policy.mode === 'bearer') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
    raw = m?.[1];
  }
  if (!raw) return ANONYMOUS;
  return createHmac('sha256', policy.hashSecret).update(`${policy.mode}:${raw}`).digest('base64url').slice(0, 32);
}
