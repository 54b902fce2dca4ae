// The auth.* settings: the resource server at the door (JWT or introspection), its scope rules,
// DPoP, and the OAuth callback of the upstreams users sign in to. Part of the one table
// (schema.ts), kept in a file of its own for its length.

import { flag, list, map, num, oneOf, text, json } from './setting.js';

/** Asymmetric JWS algorithms only: never `none`, never an HMAC keyed by what a public key would be. */
export const AUTH_ALGORITHMS: readonly string[] = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

export const AUTH_SETTINGS = {
  mode: oneOf(
    ['none', 'jwt', 'introspection'],
    'none',
    'OAuth 2.1 resource server on every MCP request: none (no check), jwt (signed access tokens checked ' +
      'against auth.jwksUrl) or introspection (RFC 7662 at auth.introspectionUrl). See Authorization.',
  ),
  issuer: text('', 'Issuer (iss) a token must carry, exactly; required unless auth.mode is none.'),
  jwksUrl: text(
    '',
    "The issuer's JWKS URL (jwt mode): fetched, cached, fetched " +
      'again for an unknown kid at most once per auth.jwksCooldownMs.',
  ),
  jwksCooldownMs: num(30_000, 'Least time between two JWKS fetches caused by unknown kid values.'),
  resource: text(
    '',
    'Public canonical URL of the MCP endpoint: the audience a token must carry (RFC 8707) and the ' +
      "metadata's resource. With several mounts, each mount's is this URL's origin plus the mount path.",
  ),
  moreIssuers: map(
    'Further issuers whose JWTs are accepted beside auth.issuer (jwt ' +
      'mode): issuer -> its JWKS URL. A token is checked against the keys ' +
      'of the issuer it names; principals of different issuers never meet.',
  ),
  authorizationServers: list(
    [],
    'authorization_servers of the Protected Resource Metadata; empty: auth.issuer and auth.moreIssuers.',
  ),
  algorithms: list(
    ['RS256', 'PS256', 'ES256', 'EdDSA'],
    `JWS algorithms accepted on access tokens, among ${AUTH_ALGORITHMS.join(', ')}.`,
  ),
  dpop: oneOf(
    ['allowed', 'required', 'off'],
    'allowed',
    'DPoP (RFC 9449) sender-constrained tokens: allowed (Bearer or DPoP; a key-bound token ' +
      'only with its proof), required (DPoP only) or off (Bearer only). See Authorization.',
  ),
  dpopAlgorithms: list(
    ['ES256', 'RS256', 'PS256', 'EdDSA'],
    `JWS algorithms accepted on DPoP proofs, among ${AUTH_ALGORITHMS.join(', ')}.`,
  ),
  dpopProofWindowMs: num(
    300_000,
    "How old a DPoP proof's iat may be (plus auth.clockSkewMs); each proof's " +
      'jti is remembered this long, shared through Redis with the Redis store.',
    { min: 1000 },
  ),
  dpopNonces: flag(
    false,
    'Require a server nonce in every DPoP proof (RFC 9449 §9): a proof without a current ' +
      'one gets 401 use_dpop_nonce with DPoP-Nonce, and DPoP answers carry the next; each ' +
      "nonce lives auth.dpopProofWindowMs, every replica takes every replica's.",
  ),
  publicDiscover: flag(
    false,
    'Answer server/discover without an access token (every other request ' +
      'still needs one). Off: discover gets the 401 challenge like any method.',
  ),
  callbackUrl: text(
    '',
    "Causeway's OAuth callback as users' browsers reach it (e.g. " +
      'https://mcp.example.com/oauth/callback): the redirect_uri of upstreams ' +
      'whose credentials grant is authorization_code; Causeway serves its path.',
  ),
  clientMetadataUrl: text(
    '',
    "Causeway's Client ID Metadata Document, an https URL with a path that Causeway " +
      'serves: its client id at upstream authorization servers that accept such documents, ' +
      'for authorization_code upstreams without a clientId (else it registers, RFC 7591).',
  ),
  clockSkewMs: num(30_000, 'Clock difference tolerated on exp, nbf and iat.'),
  introspectionUrl: text('', 'RFC 7662 introspection endpoint (introspection mode).'),
  introspectionClientId: text('', "Causeway's client id at the introspection endpoint (HTTP Basic)."),
  introspectionClientSecret: text('', 'Its client secret (prefer the env var); never logged.', { secret: true }),
  introspectionCacheMs: num(
    60_000,
    'Longest time an active introspection answer is reused (never ' +
      'past the token exp); inactive ones are reused 5 s at most.',
  ),
  introspectionCacheSize: num(
    10_000,
    'Most introspection answers kept, by a hash of the token; the oldest goes first.',
    { min: 1 },
  ),
  /** `method` or `method name-pattern` -> the scopes it requires (see scope-rules.ts). */
  rules: json<unknown>(
    'Scopes required, e.g. {"*":["mcp"],"tools/call admin_*":["mcp:admin"]}: every rule ' +
      'whose method (or *) and name pattern match applies; lists show only what may be called.',
  ),
};
