// WWW-Authenticate values of the resource server [RFC 6750 §3, RFC 9728 §5.1]: every one names
// the metadata; a token that was sent and refused adds error="invalid_token"; a lack of scope
// names every scope the request needs at once.

/** Scopes and URLs are already restricted to characters a quoted-string may hold as is. */
function param(name: string, value: string): string {
  return `${name}="${value.replace(/["\\]/g, '\\$&')}"`;
}

export function missingTokenChallenge(metadata: string): string {
  return `Bearer ${param('resource_metadata', metadata)}`;
}

export function invalidTokenChallenge(metadata: string): string {
  return `Bearer ${param('error', 'invalid_token')}, ${param('resource_metadata', metadata)}`;
}

export function insufficientScopeChallenge(metadata: string, scopes: readonly string[]): string {
  return `Bearer ${param('error', 'insufficient_scope')}, ${param('scope', scopes.join(' '))}, ${param('resource_metadata', metadata)}`;
}
