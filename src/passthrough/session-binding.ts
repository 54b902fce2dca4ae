// A legacy session belongs to the principal that opened it. The Mcp-Session-Id handed to a
// legacy client carries a MAC over (upstream, owner's principal hash, upstream session id), keyed
// by principal.hashSecret; a request whose id does not verify for its own principal is answered
// as an unknown session, before anything is sent upstream. Every replica holding the secret
// checks it alone: no store lookup on the legacy path, and nothing lost when Redis is away.

import { createHmac, timingSafeEqual } from 'node:crypto';

/** 128 bits of HMAC-SHA-256, base64url. */
const TAG_CHARS = 22;

export class SessionBinding {
  constructor(
    private readonly secret: string,
    private readonly upstream: string,
  ) {}

  /** The id the client sees: `<upstream id>.<tag>`. */
  bind(sessionId: string, principal: string): string {
    return `${sessionId}.${this.tag(sessionId, principal)}`;
  }

  /** The upstream id inside `clientId` when it was bound to `principal`; undefined otherwise. */
  open(clientId: string, principal: string): string | undefined {
    const dot = clientId.lastIndexOf('.');
    if (dot <= 0 || clientId.length - dot - 1 !== TAG_CHARS) return undefined;
    const sessionId = clientId.slice(0, dot);
    const given = Buffer.from(clientId.slice(dot + 1));
    const want = Buffer.from(this.tag(sessionId, principal));
    return given.length === want.length && timingSafeEqual(given, want) ? sessionId : undefined;
  }

  private tag(sessionId: string, principal: string): string {
    return createHmac('sha256', this.secret)
      .update(`legacy-session\n${this.upstream}\n${principal}\n${sessionId}`)
      .digest('base64url')
      .slice(0, TAG_CHARS);
  }
}
