// The access token each principal came with last, kept in this replica's memory only, for the
// upstreams whose credential is an RFC 8693 exchange of it: the exchange may be needed after the
// request that brought the token (a session's initialize, a refresh during a listen). Held no
// longer than the token lives, by principal hash, a bounded number; never logged or stored.

import type { SubjectSource } from '../upstream/index.js';
import { BoundedMap } from '../bounded.js';

const MAX_SUBJECTS = 10_000;
/** A token whose end is not known (introspection without exp) is kept this long. */
const UNKNOWN_LIFETIME_MS = 60_000;

export class SubjectTokens implements SubjectSource {
  private readonly tokens = new BoundedMap<string, { token: string; expiresAt: number }>(MAX_SUBJECTS);

  /** `principal`: the token's principal hash, the one the pool keys sessions on. */
  remember(principal: string, token: string, expiresAt: number | undefined): void {
    const known = this.tokens.get(principal);
    if (known?.token === token) return;
    this.tokens.delete(principal);
    this.tokens.set(principal, { token, expiresAt: expiresAt ?? Date.now() + UNKNOWN_LIFETIME_MS });
  }

  subject(principal: string): { token: string; expiresAt: number } | undefined {
    const s = this.tokens.get(principal);
    if (s && s.expiresAt <= Date.now()) {
      this.tokens.delete(principal);
      return undefined;
    }
    return s;
  }
}
