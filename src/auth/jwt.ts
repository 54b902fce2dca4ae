// JWT access tokens (RFC 9068) checked here, with no call to the authorization server per
// request: signature by a key of the issuer's JWKS (cached; fetched again for an unknown kid,
// at most once per cooldown), an allowed asymmetric alg, exact iss, aud holding this resource
// (RFC 8707), exp / nbf within the clock skew, and a subject.

import { createRemoteJWKSet, decodeJwt, errors, jwtVerify } from 'jose';
import { audiencesOf, grantOf, type TokenVerifier, type Verified, type VerifierOptions } from './grant.js';
import type { AuthFailure } from '../metrics/index.js';

export interface JwtOptions extends VerifierOptions {
  jwksUrl: string;
  algorithms: readonly string[];
  cooldownMs: number;
}

const JWKS_TIMEOUT_MS = 5_000;

export class JwtVerifier implements TokenVerifier {
  private readonly keys: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly opts: JwtOptions) {
    this.keys = createRemoteJWKSet(new URL(opts.jwksUrl), {
      cooldownDuration: opts.cooldownMs,
      timeoutDuration: JWKS_TIMEOUT_MS,
    });
  }

  async verify(token: string): Promise<Verified> {
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        issuer: this.opts.issuer,
        audience: [...this.opts.audiences],
        algorithms: [...this.opts.algorithms],
        clockTolerance: this.opts.clockSkewMs / 1000,
        requiredClaims: ['exp'],
      });
      if (typeof payload.sub !== 'string' || payload.sub === '') return { ok: false, failure: 'missing_subject' };
      return grantOf(payload, payload.sub, audiencesOf(payload), payload.exp! * 1000, this.opts);
    } catch (err) {
      return { ok: false, failure: failureOf(err) };
    }
  }
}

/**
 * Several issuers (auth.moreIssuers): a token goes to the verifier of the issuer it names, and
 * only there, so one issuer's keys never vouch for another's tokens.
 */
export class IssuerSet implements TokenVerifier {
  private readonly byIssuer: ReadonlyMap<string, JwtVerifier>;

  constructor(jwksUrls: ReadonlyMap<string, string>, common: Omit<JwtOptions, 'issuer' | 'jwksUrl'>) {
    this.byIssuer = new Map(
      [...jwksUrls].map(([issuer, jwksUrl]) => [issuer, new JwtVerifier({ ...common, issuer, jwksUrl })]),
    );
  }

  async verify(token: string): Promise<Verified> {
    // One issuer (the usual case): its verifier checks iss itself, with no second decode.
    if (this.byIssuer.size === 1) return this.byIssuer.values().next().value!.verify(token);
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      return { ok: false, failure: 'malformed_token' };
    }
    const verifier = typeof iss === 'string' ? this.byIssuer.get(iss) : undefined;
    return verifier ? verifier.verify(token) : { ok: false, failure: 'wrong_issuer' };
  }
}

const CLAIM_FAILURES: Readonly<Record<string, AuthFailure>> = {
  iss: 'wrong_issuer',
  aud: 'wrong_audience',
  nbf: 'not_yet_valid',
  exp: 'malformed_token',
};

function failureOf(err: unknown): AuthFailure {
  if (err instanceof errors.JWTExpired) return 'expired';
  if (err instanceof errors.JWTClaimValidationFailed) return CLAIM_FAILURES[err.claim] ?? 'malformed_token';
  if (err instanceof errors.JWSSignatureVerificationFailed || err instanceof errors.JWKSMultipleMatchingKeys)
    return 'bad_signature';
  if (err instanceof errors.JWKSNoMatchingKey) return 'unknown_key';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'disallowed_algorithm';
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid || err instanceof errors.JOSENotSupported)
    return 'malformed_token';
  // Anything else is the JWKS not fetched or not readable: the issuer is at fault, not the token.
  return 'unavailable';
}
