// WWW-Authenticate values of the resource server [RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1]:
// one challenge per accepted scheme (Bearer, DPoP with its algs), each naming the metadata; a
// refusal's error goes on the scheme the request used (on every offered one when it sent none
// usable); a lack of scope names every scope the request needs at once, and a 401 names the
// scopes every request needs (the `*` rule), so a client asks for them at its first login.

export type Scheme = 'Bearer' | 'DPoP';

export interface ChallengeError {
  /** The scheme the request used; undefined when it used none accepted. */
  scheme: Scheme | undefined;
  error: 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce' | 'insufficient_scope';
  /** insufficient_scope only. */
  scopes?: readonly string[];
}

/** Scopes, algorithms and URLs are already restricted to characters a quoted-string may hold as is. */
function param(name: string, value: string): string {
  return `${name}="${value.replace(/["\\]/g, '\\$&')}"`;
}

export class Challenges {
  /** `schemes`: the accepted ones, in the order offered; `dpopAlgorithms` for the DPoP one. */
  constructor(
    private readonly metadata: string,
    private readonly schemes: readonly Scheme[],
    private readonly dpopAlgorithms: readonly string[],
    /** What every request needs, named on the challenges that name no other scopes. */
    private readonly baseline: readonly string[] = [],
  ) {}

  /** No token, or nothing readable as one: every scheme, no error [RFC 6750 §3.1]. */
  missing(): string {
    return this.schemes.map((s) => this.one(s, undefined)).join(', ');
  }

  refused(e: ChallengeError): string {
    return this.schemes.map((s) => this.one(s, e.scheme === undefined || e.scheme === s ? e : undefined)).join(', ');
  }

  private one(scheme: Scheme, e: ChallengeError | undefined): string {
    const params: string[] = [];
    if (e) params.push(param('error', e.error));
    const scopes = e?.scopes ?? this.baseline;
    if (scopes.length > 0) params.push(param('scope', scopes.join(' ')));
    if (scheme === 'DPoP') params.push(param('algs', this.dpopAlgorithms.join(' ')));
    params.push(param('resource_metadata', this.metadata));
    return `${scheme} ${params.join(', ')}`;
  }
}
