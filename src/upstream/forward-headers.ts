// Which client headers go upstream: one allowlist per upstream, the same on the modern and the
// legacy path. Causeway is the resource server of its own face; a client's credential is meant
// for Causeway, and passing it on is the token passthrough the MCP authorization spec forbids.
// So credentials go upstream only when an upstream's list names them exactly (a prefix such as
// `x-*` never covers one), and hop-by-hop headers never go [RFC 9110 §7.6.1]. The upstream's own
// credential belongs in upstream.headers.

import type { IncomingHttpHeaders } from 'node:http';

export const DEFAULT_CREDENTIAL_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-api-key',
  'dpop',
];

/** Never forwarded: hop-by-hop, or set by the HTTP client for the upstream hop itself. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'http2-settings',
  // The client's expectation of this hop (100-continue); undici refuses to send it on.
  'expect',
]);

export class ForwardPolicy {
  private readonly exact: ReadonlySet<string>;
  private readonly prefixes: readonly string[];
  private readonly credentials: ReadonlySet<string>;

  /** `credentials`: every header that is a credential here (the defaults, configured ones, the principal header). */
  constructor(allow: readonly string[], credentials: Iterable<string>) {
    const names = allow.map((n) => n.toLowerCase());
    this.exact = new Set(names.filter((n) => !n.endsWith('*') && !HOP_BY_HOP.has(n)));
    this.prefixes = names.filter((n) => n.endsWith('*')).map((n) => n.slice(0, -1));
    this.credentials = new Set([...credentials].map((n) => n.toLowerCase()));
  }

  allows(name: string): boolean {
    if (this.exact.has(name)) return true;
    if (this.prefixes.length === 0 || HOP_BY_HOP.has(name) || this.credentials.has(name) || name.startsWith(':'))
      return false;
    return this.prefixes.some((p) => name.startsWith(p));
  }

  /** The allowed headers of a request, lower-cased; those the request's Connection names are left out. */
  pick(headers: IncomingHttpHeaders | Readonly<Record<string, string>>): Record<string, string> {
    const out: Record<string, string> = {};
    let named: Set<string> | undefined;
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined || !this.allows(name)) continue;
      named ??= connectionNamed(headers.connection);
      if (named.has(name)) continue;
      out[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    return out;
  }
}

function connectionNamed(connection: string | string[] | undefined): Set<string> {
  return new Set(
    String(connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
}
