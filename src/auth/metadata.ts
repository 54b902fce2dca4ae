// Protected Resource Metadata (RFC 9728) and where it lives: each resource's document at its
// path-inserted well-known URI (§3.1), the first mount's also at the root one, which the MCP
// spec has clients try second. Documents are built once; the routes need no token.

import type { JsonObject } from '../jsonrpc.js';

export const WELL_KNOWN_PRM = '/.well-known/oauth-protected-resource';

/** The well-known path a resource URL's metadata is at: its path inserted after the prefix. */
export function metadataPath(resource: string): string {
  const path = new URL(resource).pathname;
  return path === '/' ? WELL_KNOWN_PRM : WELL_KNOWN_PRM + path;
}

/** The absolute URL of a resource's metadata, for the challenge's resource_metadata. */
export function metadataUrl(resource: string): string {
  return new URL(resource).origin + metadataPath(resource);
}

/** `dpopAlgorithms` empty when DPoP is off; `dpopRequired` with auth.dpop required [RFC 9449 §5.1]. */
export function metadataDocument(
  resource: string,
  authorizationServers: readonly string[],
  scopes: readonly string[],
  dpopAlgorithms: readonly string[],
  dpopRequired: boolean,
): JsonObject {
  const doc: JsonObject = {
    resource,
    authorization_servers: [...authorizationServers],
    bearer_methods_supported: ['header'],
  };
  if (scopes.length > 0) doc.scopes_supported = [...scopes];
  if (dpopAlgorithms.length > 0) doc.dpop_signing_alg_values_supported = [...dpopAlgorithms];
  if (dpopRequired) doc.dpop_bound_access_tokens_required = true;
  return doc;
}
