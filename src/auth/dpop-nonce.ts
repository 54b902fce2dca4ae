// DPoP server nonces (RFC 9449 §9, auth.dpopNonces): a proof must carry a nonce Causeway issued
// lately, so a proof made ahead of time (by a thief holding the key for a while) is useless. The
// nonce is stateless: a time window and its HMAC under a key every replica derives from
// principal.hashSecret, so any replica takes any replica's nonce, and the one before it.

import { createHmac, timingSafeEqual } from 'node:crypto';

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
    return `${window.toString(36)}.${createHmac('sha256', this.key).update(String(window)).digest('base64url').slice(0, 22)}`;
  }
}
