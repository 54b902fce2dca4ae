// Causeway's own credential for an upstream, never the client's token [AUTH-SEC]: an OAuth
// client-credentials token (one per upstream), or an RFC 8693 exchange of the client's token for
// one addressed to the upstream (one per principal). A token is reused until shortly before it
// expires (then fetched again in the background while it still serves), fetched once for all
// concurrent callers, and forgotten when the upstream refuses it. No token reaches a log.

import type { CredentialSpec } from '../../config/index.js';
import type { Logger } from '../../log.js';
import { credentialError, tokenEndpoint, tokenRequest } from './token-calls.js';
import { BoundedMap } from '../../bounded.js';

/** How an upstream's requests are authorized: Causeway's own token, or the user's own (sign-in.ts). */
export interface UpstreamAuthorization {
  /** The Authorization value of a request made for `principal`; undefined: none to send. */
  authorization(principal: string | undefined): Promise<string | undefined>;
  /**
   * The upstream answered 401 to a request sent with `sent`: true to try once more with a new
   * token (never after the `last` try, when the 401 is relayed); throws instead when the answer
   * is an error of Causeway's own.
   */
  refused(principal: string | undefined, sent: string | undefined, last: boolean): Promise<boolean>;
}

/** The access token a principal's requests came with lately: the subject of an exchange. */
export interface SubjectSource {
  subject(principal: string): { token: string; expiresAt: number } | undefined;
}

interface Held {
  value: string;
  /** From then on a new token is fetched in the background. */
  refreshAt: number;
  expiresAt: number;
}

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
/** The key of the one client-credentials token. */
const SHARED = '';
/** Most exchanged tokens kept; the least recently fetched goes first. */
const MAX_HELD = 10_000;
/** A token answer without expires_in is used this long. */
const DEFAULT_LIFETIME_MS = 60_000;

export class UpstreamCredentials implements UpstreamAuthorization {
  private readonly held = new BoundedMap<string, Held>(MAX_HELD);
  private readonly fetching = new Map<string, Promise<Held>>();

  constructor(
    private readonly spec: CredentialSpec,
    private readonly subjects: SubjectSource | undefined,
    private readonly log: Logger,
  ) {}

  /** The Authorization value of a request made for `principal` (its pooled session's, or its own). */
  async authorization(principal: string | undefined): Promise<string> {
    const key = this.keyOf(principal);
    const now = Date.now();
    const held = this.held.get(key);
    if (held && now < held.expiresAt) {
      if (now >= held.refreshAt) void this.fetch(key).catch(() => undefined);
      return `Bearer ${held.value}`;
    }
    return `Bearer ${(await this.fetch(key)).value}`;
  }

  /** The next request fetches a new token (one refused early: revoked, its keys rotated). */
  async refused(principal: string | undefined, sent: string | undefined, last: boolean): Promise<boolean> {
    const key = this.keyOf(principal);
    if (`Bearer ${this.held.get(key)?.value}` === sent) this.held.delete(key);
    return !last;
  }

  private keyOf(principal: string | undefined): string {
    if (this.spec.grant === 'client_credentials') return SHARED;
    if (principal === undefined) throw credentialError('No principal to exchange a token for');
    return principal;
  }

  private fetch(key: string): Promise<Held> {
    let p = this.fetching.get(key);
    if (!p) {
      p = this.obtain(key).finally(() => this.fetching.delete(key));
      this.fetching.set(key, p);
    }
    return p;
  }

  private async obtain(key: string): Promise<Held> {
    const { spec } = this;
    const form = new URLSearchParams();
    let notAfter = Infinity;
    const grant = spec.grant === 'client_credentials' ? spec.grant : TOKEN_EXCHANGE;
    if (grant === TOKEN_EXCHANGE) {
      const subject = this.subjects?.subject(key);
      if (!subject || subject.expiresAt <= Date.now())
        throw credentialError('No live client token to exchange for the upstream’s');
      // The upstream's token speaks for the client no longer than the client's own does.
      notAfter = subject.expiresAt;
      form.set('subject_token', subject.token);
      form.set('subject_token_type', ACCESS_TOKEN);
      form.set('requested_token_type', ACCESS_TOKEN);
      if (spec.audience !== '') form.set('audience', spec.audience);
    }
    if (spec.resource !== '') form.set('resource', spec.resource);
    if (spec.scope !== '') form.set('scope', spec.scope);
    const sent = Date.now();
    const client = { id: spec.clientId, secret: spec.clientSecret };
    const answer = await tokenRequest(tokenEndpoint(spec.tokenUrl), client, grant, form, this.log);
    const lifetime = answer.expiresInS === undefined ? DEFAULT_LIFETIME_MS : answer.expiresInS * 1000;
    const expiresAt = Math.min(sent + lifetime, notAfter);
    // Fetched again once 80% of its life is spent, and never in its last 10 s without waiting.
    const held: Held = {
      value: answer.token,
      expiresAt: expiresAt - Math.min(10_000, lifetime / 10),
      refreshAt: sent + lifetime * 0.8,
    };
    this.held.delete(key);
    this.held.set(key, held);
    return held;
  }
}
