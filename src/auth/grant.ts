// What a verified access token grants: who it speaks for (its issuer and subject, the principal
// the pool and the session bindings key on) and its scopes, checked against auth.rules. Failure
// reasons form a closed set: they label a metric and a log field, never a token or claim value.

import type { JsonObject } from '../jsonrpc.js';
import type { AuthFailure } from '../metrics/index.js';
import type { ScopeRule } from '../config/index.js';
import type { ListLens } from '../view/index.js';
import { FILTERED_LISTS, filterList, mayHide, missingScopes } from './rules.js';

export interface Identity {
  readonly issuer: string;
  readonly subject: string;
  /** The OAuth client the token was issued to (client_id), when it says: for the audit record, not the principal. */
  readonly clientId?: string;
  /** The claim quotas.tenantClaim names, when it is a non-empty string: whose quotas the request spends. */
  readonly tenant?: string;
}

/**
 * The client_id claim (RFC 9068 §2.2) or introspection member (RFC 7662 §2.2), and the tenant claim, when each is a
 * non-empty string.
 */
export function namedClaims(
  claims: Readonly<Record<string, unknown>>,
  tenantClaim: string,
): { clientId?: string; tenant?: string } {
  const named: { clientId?: string; tenant?: string } = {};
  const { client_id: id } = claims;
  if (typeof id === 'string' && id !== '') named.clientId = id;
  const tenant = tenantClaim === '' ? undefined : claims[tenantClaim];
  if (typeof tenant === 'string' && tenant !== '') named.tenant = tenant;
  return named;
}

/** A token checked by a verifier: its identity and scopes, or why it is refused. */
export type Verified =
  | {
      ok: true;
      identity: Identity;
      scopes: ReadonlySet<string>;
      audiences: readonly string[];
      jkt: string | undefined;
      /** When the token ends (ms since the epoch); undefined: the introspection answer did not say. */
      expiresAt: number | undefined;
    }
  | { ok: false; failure: AuthFailure };

/** What every token verifier is told. */
export interface VerifierOptions {
  issuer: string;
  /** Every audience accepted: the resources of the mounts. */
  audiences: readonly string[];
  clockSkewMs: number;
  /** The claim naming the tenant quotas count for (quotas.tenantClaim). */
  tenantClaim: string;
}

/**
 * The verdict on a token whose signature (or introspection answer), times and audience are checked already: refused
 * when bound to a key other than DPoP's, else its identity, scopes and binding.
 */
export function grantOf(
  claims: Readonly<Record<string, unknown>>,
  subject: string,
  audiences: string[],
  expiresAt: number | undefined,
  opts: VerifierOptions,
): Verified {
  const binding = bindingOf(claims);
  if (binding === 'other') return { ok: false, failure: 'bound_token' };
  const identity = { issuer: opts.issuer, subject, ...namedClaims(claims, opts.tenantClaim) };
  return { ok: true, identity, scopes: scopesOf(claims), audiences, jkt: binding?.jkt, expiresAt };
}

export interface TokenVerifier {
  verify(token: string): Promise<Verified>;
}

/** A request's access: its identity, and what its scopes let it see and call. */
export class Access implements ListLens {
  constructor(
    readonly identity: Identity,
    private readonly scopes: ReadonlySet<string>,
    private readonly rules: readonly ScopeRule[],
    /** How the token came: a refusal's challenge names this scheme. */
    readonly scheme: 'Bearer' | 'DPoP' = 'Bearer',
  ) {}

  /** The scopes the request still needs, all of them when any is missing; empty when allowed. */
  missing(method: string, name: string | undefined): string[] {
    return missingScopes(this.rules, this.scopes, method, name);
  }

  /** Whether a list answer of this method could lose items for this grant: else it need not be read at all. */
  mayHide(method: string): boolean {
    return mayHide(this.rules, this.scopes, method);
  }

  /**
   * A tools, prompts, resources or templates list as this grant may see it: private to it, whatever the cache policy.
   */
  filterList(method: string, result: JsonObject): JsonObject {
    if (!FILTERED_LISTS.has(method)) return result;
    const out = filterList(this.rules, this.scopes, method, result);
    return 'cacheScope' in out ? { ...out, cacheScope: 'private' } : out;
  }
}

/** The token's aud claim as a list. */
export function audiencesOf(claims: Readonly<Record<string, unknown>>): string[] {
  const aud = claims.aud;
  return typeof aud === 'string'
    ? [aud]
    : Array.isArray(aud)
      ? aud.filter((a): a is string => typeof a === 'string')
      : [];
}

/**
 * The token's key binding (cnf): none, a DPoP key thumbprint (cnf.jkt, RFC 9449 §6), or 'other'
 * (an mTLS certificate, RFC 8705), which nothing here can check.
 */
export function bindingOf(claims: Readonly<Record<string, unknown>>): { jkt: string } | 'other' | undefined {
  const cnf = claims.cnf;
  if (typeof cnf !== 'object' || cnf === null || Object.keys(cnf).length === 0) return undefined;
  const jkt = (cnf as Record<string, unknown>).jkt;
  return typeof jkt === 'string' && jkt !== '' && Object.keys(cnf).length === 1 ? { jkt } : 'other';
}

/** `scope` (RFC 9068, RFC 7662: space-delimited) or `scp` (a list, as some servers issue it). */
export function scopesOf(claims: Readonly<Record<string, unknown>>): Set<string> {
  const out = new Set<string>();
  if (typeof claims.scope === 'string') for (const s of claims.scope.split(' ')) if (s) out.add(s);
  if (Array.isArray(claims.scp)) for (const s of claims.scp) if (typeof s === 'string' && s) out.add(s);
  return out;
}
