// Opaque (or any) access tokens checked by RFC 7662 introspection with Causeway's own client
// credentials. Answers are kept in a bounded cache keyed by a SHA-256 of the token (the token
// itself is never kept): an active one until the token's exp or auth.introspectionCacheMs,
// whichever is first; an inactive one briefly, so a burst of bad tokens costs one call each.
// An active answer still has its iss, aud, exp and nbf checked here.

import { createHash } from 'node:crypto';
import { request } from 'undici';
import { isObject } from '../jsonrpc.js';
import { audiencesOf, grantOf, type TokenVerifier, type Verified, type VerifierOptions } from './grant.js';
import { BoundedMap } from '../bounded.js';

export interface IntrospectionOptions extends VerifierOptions {
  url: string;
  clientId: string;
  clientSecret: string;
  cacheMs: number;
  cacheSize: number;
}

/** The introspection call's time and answer size, and how long at most an inactive answer is kept. */
const BOUNDS = { timeoutMs: 5_000, answerBytes: 65_536, negativeMs: 5_000 } as const;

interface Cached {
  expiresAt: number;
  verdict: Verified;
}

export class IntrospectionVerifier implements TokenVerifier {
  private readonly cache: BoundedMap<string, Cached>;
  /** One introspection call per token at a time: concurrent requests share its answer. */
  private readonly pending = new Map<string, Promise<Verified>>();
  private readonly authorization: string;

  constructor(private readonly opts: IntrospectionOptions) {
    this.cache = new BoundedMap(opts.cacheSize);
    // RFC 6749 §2.3.1: each part form-encoded before Basic.
    const basic = `${encodeURIComponent(opts.clientId)}:${encodeURIComponent(opts.clientSecret)}`;
    this.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
  }

  async verify(token: string): Promise<Verified> {
    const key = createHash('sha256').update(token).digest('base64url');
    const hit = this.cache.get(key);
    if (hit && hit.expiresAt > Date.now()) return hit.verdict;
    if (hit) this.cache.delete(key);
    let call = this.pending.get(key);
    if (!call) {
      call = this.introspect(token, key).finally(() => this.pending.delete(key));
      this.pending.set(key, call);
    }
    return call;
  }

  private async introspect(token: string, key: string): Promise<Verified> {
    let answer: unknown;
    try {
      const res = await request(this.opts.url, {
        method: 'POST',
        headers: {
          authorization: this.authorization,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        headersTimeout: BOUNDS.timeoutMs,
        bodyTimeout: BOUNDS.timeoutMs,
      });
      const text = await res.body.text();
      if (res.statusCode !== 200 || text.length > BOUNDS.answerBytes) return { ok: false, failure: 'unavailable' };
      answer = JSON.parse(text);
    } catch {
      return { ok: false, failure: 'unavailable' };
    }
    const now = Date.now();
    const verdict = this.judge(answer, now);
    const exp = isObject(answer) && typeof answer.exp === 'number' ? answer.exp * 1000 : Infinity;
    const until = verdict.ok
      ? Math.min(now + this.opts.cacheMs, exp)
      : now + Math.min(BOUNDS.negativeMs, this.opts.cacheMs);
    if (verdict.ok || verdict.failure !== 'unavailable') this.cache.set(key, { expiresAt: until, verdict });
    return verdict;
  }

  private judge(a: unknown, now: number): Verified {
    if (!isObject(a)) return { ok: false, failure: 'unavailable' };
    if (a.active !== true) return { ok: false, failure: 'inactive' };
    const skew = this.opts.clockSkewMs;
    if (typeof a.exp === 'number' && a.exp * 1000 + skew <= now) return { ok: false, failure: 'expired' };
    if (typeof a.nbf === 'number' && a.nbf * 1000 - skew > now) return { ok: false, failure: 'not_yet_valid' };
    if (a.iss !== undefined && a.iss !== this.opts.issuer) return { ok: false, failure: 'wrong_issuer' };
    const audiences = audiencesOf(a);
    if (!audiences.some((x) => this.opts.audiences.includes(x))) return { ok: false, failure: 'wrong_audience' };
    // A client-credentials token speaks for its client: no sub, the client_id is the subject.
    const subject =
      typeof a.sub === 'string' && a.sub !== ''
        ? a.sub
        : typeof a.client_id === 'string' && a.client_id !== ''
          ? a.client_id
          : undefined;
    if (subject === undefined) return { ok: false, failure: 'missing_subject' };
    const expiresAt = typeof a.exp === 'number' ? a.exp * 1000 : undefined;
    return grantOf(a, subject, audiences, expiresAt, this.opts);
  }
}
