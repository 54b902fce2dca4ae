// DPoP proofs (RFC 9449 §4.3) checked for a request carrying `Authorization: DPoP <token>`: one
// `DPoP` header holding a dpop+jwt signed by its embedded public key with an allowed asymmetric
// alg; htm and htu naming this request's method and public URL; iat within the proof window;
// ath the hash of the token; the key's thumbprint the token's cnf.jkt; a jti never seen within
// the window; with auth.dpopNonces, a nonce Causeway issued lately (DpopNonces, below).

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, jwtVerify, type JWK } from 'jose';
import type { AuthFailure } from '../metrics/index.js';
import type { ReplayCache } from './replay-cache.js';

export interface DpopOptions {
  algorithms: readonly string[];
  clockSkewMs: number;
  /** How old a proof's iat may be; the replay cache keeps each jti this long plus the skew. */
  windowMs: number;
  replays: ReplayCache;
  /** Server nonces every proof must carry; undefined: none asked for. */
  nonces?: DpopNonces;
}

export interface ProofRequest {
  /** The DPoP header as received (several are joined with commas, and refused). */
  proof: string | undefined;
  method: string;
  /** The request's public URL without query or fragment. */
  url: string;
  token: string;
  /** The token's cnf.jkt. */
  jkt: string;
}

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** The URL as compared [RFC 9449 §4.3 point 9]: scheme, host and path normalized, query and fragment dropped. */
export function normalizeHtu(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.origin + u.pathname;
  } catch {
    return undefined;
  }
}

export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

export class DpopVerifier {
  constructor(private readonly opts: DpopOptions) {}

  /** undefined when the proof holds for this request and token, else why not. */
  async check(req: ProofRequest): Promise<AuthFailure | undefined> {
    if (req.proof === undefined || !JWS_COMPACT.test(req.proof)) return 'dpop_invalid_proof';
    let jwk: JWK;
    let payload: Record<string, unknown>;
    try {
      const header = decodeProtectedHeader(req.proof);
      if (typeof header.jwk !== 'object' || header.jwk === null) return 'dpop_invalid_proof';
      jwk = header.jwk;
      if (PRIVATE_MEMBERS.some((m) => m in jwk)) return 'dpop_invalid_proof';
      ({ payload } = await jwtVerify(req.proof, EmbeddedJWK, {
        typ: 'dpop+jwt',
        algorithms: [...this.opts.algorithms],
      }));
    } catch {
      return 'dpop_invalid_proof';
    }
    const { jti, htm, htu, iat, ath } = payload;
    if (typeof jti !== 'string' || jti === '' || jti.length > 256 || typeof htu !== 'string' || typeof iat !== 'number')
      return 'dpop_invalid_proof';
    if (htm !== req.method || normalizeHtu(htu) !== normalizeHtu(req.url)) return 'dpop_wrong_target';
    const now = Date.now();
    const { clockSkewMs: skew, windowMs } = this.opts;
    if (iat * 1000 > now + skew || iat * 1000 < now - windowMs - skew) return 'dpop_stale';
    if (ath !== tokenHash(req.token)) return 'dpop_wrong_token';
    const thumbprint = await calculateJwkThumbprint(jwk, 'sha256');
    if (thumbprint !== req.jkt) return 'dpop_key_mismatch';
    if (this.opts.nonces && !this.opts.nonces.accepts(payload.nonce)) return 'dpop_nonce';
    // Last, so a proof refused for another reason does not use up its jti.
    const fresh = await this.opts.replays.first(`${thumbprint}.${jti}`, windowMs + 2 * skew).catch(() => undefined);
    if (fresh === undefined) return 'unavailable';
    return fresh ? undefined : 'dpop_replayed';
  }
}

/**
 * DPoP server nonces (RFC 9449 §9, auth.dpopNonces): a proof must carry a nonce Causeway issued
 * lately, so a proof made ahead of time (by a thief holding the key for a while) is useless. The
 * nonce is stateless: a time window and its HMAC under a key every replica derives from
 * principal.hashSecret, so any replica takes any replica's nonce, and the one before it.
 */
export class DpopNonces {
  private readonly key: Buffer;
  private cached: { window: number; nonce: string } | undefined;

  constructor(
    secret: string,
    /** How long each nonce is issued; it is taken for up to twice that. */
    private readonly lifetimeMs: number,
  ) {
    this.key = createHmac('sha256', secret).update('causeway dpop nonce').digest();
  }

  /** The nonce to hand out now. */
  current(): string {
    const window = Math.floor(Date.now() / this.lifetimeMs);
    if (this.cached?.window !== window) this.cached = { window, nonce: this.make(window) };
    return this.cached.nonce;
  }

  accepts(nonce: unknown): boolean {
    if (typeof nonce !== 'string' || nonce.length > 64) return false;
    const window = Math.floor(Date.now() / this.lifetimeMs);
    return [window, window - 1].some((w) => {
      const expected = Buffer.from(this.make(w));
      const given = Buffer.from(nonce);
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
  }

  private make(window: number): string {
    const mac = createHmac('sha256', this.key).update(String(window)).digest('base64url');
    return `${window.toString(36)}.${mac.slice(0, 22)}`;
  }
}
