// The resource server in front of every mount (auth.mode jwt or introspection): each request's
// bearer token is verified before anything else is done with it, and its scopes are held against
// auth.rules before any upstream traffic. Refusals are typed errors carrying their challenge;
// each is reported once by reason through onFailure, and nothing here logs a token or a claim.

import { causewayError, challengeError, type CausewayError } from '../errors.js';
import type { JsonObject } from '../jsonrpc.js';
import type { Config } from '../config/index.js';
import type { HeaderBag } from '../envelope/index.js';
import { insufficientScopeChallenge, invalidTokenChallenge, missingTokenChallenge } from './challenge.js';
import { Access, type AuthFailure, type TokenVerifier } from './grant.js';
import { IntrospectionVerifier } from './introspection.js';
import { JwtVerifier } from './jwt.js';
import { metadataDocument, metadataPath, metadataUrl, WELL_KNOWN_PRM } from './metadata.js';
import { parseRules, scopesNamed, type ScopeRule } from './rules.js';

export type AuthSettings = Config['auth'];

export type Authenticated = { ok: true; access: Access } | { ok: false; failure: AuthFailure; error: CausewayError };

interface Protected {
  resource: string;
  metadataUrl: string;
}

/** RFC 6750 §2.1 b64token, the only way a token is accepted: never in a query or a body. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** Each mount's resource: auth.resource for a single mount, else its origin plus the mount path. */
export function resourcesOf(settings: Pick<AuthSettings, 'resource'>, mountPaths: readonly string[]): Map<string, string> {
  if (mountPaths.length === 1) return new Map([[mountPaths[0]!, settings.resource]]);
  const origin = new URL(settings.resource).origin;
  return new Map(mountPaths.map((p) => [p, origin + p]));
}

export class ResourceServer {
  private readonly mounts = new Map<string, Protected>();
  /** Well-known path -> its metadata document. */
  private readonly documents = new Map<string, JsonObject>();
  private readonly rules: readonly ScopeRule[];
  private readonly verifier: TokenVerifier;

  constructor(
    settings: AuthSettings,
    mountPaths: readonly string[],
    private readonly onFailure: (reason: AuthFailure) => void,
  ) {
    this.rules = parseRules(settings.rules).rules;
    const servers = settings.authorizationServers.length > 0 ? settings.authorizationServers : [settings.issuer];
    const scopes = scopesNamed(this.rules);
    const resources = resourcesOf(settings, mountPaths);
    for (const [path, resource] of resources) {
      this.mounts.set(path, { resource, metadataUrl: metadataUrl(resource) });
      const doc = metadataDocument(resource, servers, scopes);
      // Served where Causeway sees the mount, and where the resource's public URL puts it.
      this.documents.set(WELL_KNOWN_PRM + (path === '/' ? '' : path), doc);
      this.documents.set(metadataPath(resource), doc);
    }
    const first = resources.values().next().value!;
    if (!this.documents.has(WELL_KNOWN_PRM)) this.documents.set(WELL_KNOWN_PRM, this.documents.get(metadataPath(first))!);
    const audiences = [...resources.values()];
    this.verifier =
      settings.mode === 'introspection'
        ? new IntrospectionVerifier({
            url: settings.introspectionUrl,
            clientId: settings.introspectionClientId,
            clientSecret: settings.introspectionClientSecret,
            issuer: settings.issuer,
            audiences,
            clockSkewMs: settings.clockSkewMs,
            cacheMs: settings.introspectionCacheMs,
            cacheSize: settings.introspectionCacheSize,
          })
        : new JwtVerifier({
            issuer: settings.issuer,
            jwksUrl: settings.jwksUrl,
            audiences,
            algorithms: settings.algorithms,
            clockSkewMs: settings.clockSkewMs,
            cooldownMs: settings.jwksCooldownMs,
          });
  }

  /** The metadata document served at a well-known path, if it is one. */
  metadata(path: string): JsonObject | undefined {
    return this.documents.get(path);
  }

  /** The request's token, verified for the mount's resource. */
  async authenticate(headers: HeaderBag, mountPath: string): Promise<Authenticated> {
    const mount = this.mounts.get(mountPath)!;
    const header = headers.authorization;
    if (header === undefined) return this.refuse('missing_token', challengeError('unauthorized', missingTokenChallenge(mount.metadataUrl)));
    const token = BEARER.exec(header)?.[1];
    if (token === undefined) return this.refuse('malformed_token', this.invalid(mount));
    const verified = await this.verifier.verify(token);
    if (!verified.ok) {
      // The issuer's keys or introspection could not be reached: not the client's fault, no challenge.
      if (verified.failure === 'unavailable') return this.refuse('unavailable', causewayError('auth_unavailable'));
      return this.refuse(verified.failure, this.invalid(mount));
    }
    // A token for another mount of this server is another resource's token [RFC 8707].
    if (!verified.audiences.includes(mount.resource)) return this.refuse('wrong_audience', this.invalid(mount));
    return { ok: true, access: new Access(verified.identity, verified.scopes, this.rules) };
  }

  /** The 403 for a request its scopes do not cover, naming every scope it needs; undefined when allowed. */
  authorize(access: Access, mountPath: string, method: string, name: string | undefined): CausewayError | undefined {
    const missing = access.missing(method, name);
    if (missing.length === 0) return undefined;
    this.onFailure('insufficient_scope');
    return challengeError('insufficient_scope', insufficientScopeChallenge(this.mounts.get(mountPath)!.metadataUrl, missing));
  }

  private invalid(mount: Protected): CausewayError {
    return challengeError('invalid_token', invalidTokenChallenge(mount.metadataUrl));
  }

  private refuse(failure: AuthFailure, error: CausewayError): Authenticated {
    this.onFailure(failure);
    return { ok: false, failure, error };
  }
}
