// The resource server in front of every mount (auth.mode jwt or introspection): each request's
// access token (Bearer, or DPoP with its proof, per auth.dpop) is verified before anything else
// is done with it, and its scopes are held against auth.rules before any upstream traffic.
// Refusals are typed errors carrying their challenge; each is reported once by reason through
// onFailure, and nothing here logs a token or a claim.

import { causewayError, challengeError, type CausewayError } from '../errors.js';
import type { JsonObject } from '../jsonrpc.js';
import { parseRules, type Config, type ScopeRule } from '../config/index.js';
import type { HeaderBag } from '../envelope/index.js';
import { Challenges, type ChallengeError, type Scheme } from './challenge.js';
import { DpopNonces, DpopVerifier } from './dpop.js';
import { Access, type TokenVerifier } from './grant.js';
import type { AuthFailure } from '../metrics/index.js';
import { IntrospectionVerifier } from './introspection.js';
import { IssuerSet } from './jwt.js';
import { metadataDocument, metadataPath, metadataUrl, WELL_KNOWN_PRM } from './metadata.js';
import { principalHash, type PrincipalPolicy } from './principal.js';
import type { ReplayCache } from './replay-cache.js';
import type { SubjectTokens } from './subject-tokens.js';
import { baselineScopes, scopesNamed } from './rules.js';

export type AuthSettings = Config['auth'];

/** `principal`: the verified identity's hash, the request's principal from here on. */
export type Authenticated =
  | { ok: true; access: Access; principal: string }
  | { ok: false; failure: AuthFailure; error: CausewayError };

interface Protected {
  /** The mount's public URL: the audience, and what a DPoP proof's htu must name. */
  resource: string;
  challenges: Challenges;
}

/** RFC 6750 §2.1 b64token in the Authorization header, the only way a token is accepted: never in a query or a body. */
const CREDENTIAL = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** DPoP failures about the token's binding rather than the proof itself [RFC 9449 §7.1]. */
const BINDING_FAILURES: ReadonlySet<AuthFailure> = new Set(['dpop_key_mismatch', 'dpop_unbound_token']);

/** Each mount's resource: auth.resource for a single mount, else its origin plus the mount path. */
export function resourcesOf(
  settings: Pick<AuthSettings, 'resource'>,
  mountPaths: readonly string[],
): Map<string, string> {
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
  private readonly dpop: DpopVerifier | undefined;
  private readonly nonces: DpopNonces | undefined;
  private readonly subjects: SubjectTokens | undefined;
  private readonly principal: PrincipalPolicy;
  private readonly mode: AuthSettings['dpop'];
  /** server/discover needs no token. */
  readonly publicDiscover: boolean;

  constructor(
    settings: AuthSettings,
    mountPaths: readonly string[],
    private readonly onFailure: (reason: AuthFailure) => void,
    replays: ReplayCache,
    more: {
      /** Told every accepted token when an upstream's credential is an exchange of it. */
      subjects?: SubjectTokens | undefined;
      /** How a verified identity is hashed; every replica derives its DPoP nonces from its hashSecret too. */
      principal: PrincipalPolicy;
      /** The claim naming a request's tenant (quotas.tenantClaim). */
      tenantClaim: string;
    },
  ) {
    this.subjects = more.subjects;
    this.principal = more.principal;
    this.rules = parseRules(settings.rules).rules;
    this.mode = settings.dpop;
    this.publicDiscover = settings.publicDiscover;
    const issuers = new Map([[settings.issuer, settings.jwksUrl], ...Object.entries(settings.moreIssuers)]);
    const servers = settings.authorizationServers.length > 0 ? settings.authorizationServers : [...issuers.keys()];
    const scopes = scopesNamed(this.rules);
    const baseline = baselineScopes(this.rules);
    const resources = resourcesOf(settings, mountPaths);
    const schemes: Scheme[] =
      settings.dpop === 'off' ? ['Bearer'] : settings.dpop === 'required' ? ['DPoP'] : ['Bearer', 'DPoP'];
    const dpopAlgorithms = settings.dpop === 'off' ? [] : settings.dpopAlgorithms;
    for (const [path, resource] of resources) {
      this.mounts.set(path, {
        resource,
        challenges: new Challenges(metadataUrl(resource), schemes, dpopAlgorithms, baseline),
      });
      const doc = metadataDocument(resource, servers, scopes, dpopAlgorithms, settings.dpop === 'required');
      // Served where Causeway sees the mount, and where the resource's public URL puts it.
      this.documents.set(WELL_KNOWN_PRM + (path === '/' ? '' : path), doc);
      this.documents.set(metadataPath(resource), doc);
    }
    const first = resources.values().next().value!;
    if (!this.documents.has(WELL_KNOWN_PRM))
      this.documents.set(WELL_KNOWN_PRM, this.documents.get(metadataPath(first))!);
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
            tenantClaim: more.tenantClaim,
          })
        : new IssuerSet(issuers, {
            audiences,
            algorithms: settings.algorithms,
            clockSkewMs: settings.clockSkewMs,
            cooldownMs: settings.jwksCooldownMs,
            tenantClaim: more.tenantClaim,
          });
    if (settings.dpop !== 'off') {
      if (settings.dpopNonces) this.nonces = new DpopNonces(more.principal.hashSecret, settings.dpopProofWindowMs);
      this.dpop = new DpopVerifier({
        algorithms: dpopAlgorithms,
        clockSkewMs: settings.clockSkewMs,
        windowMs: settings.dpopProofWindowMs,
        replays,
        nonces: this.nonces,
      });
    }
  }

  /** The metadata document served at a well-known path, if it is one. */
  metadata(path: string): JsonObject | undefined {
    return this.documents.get(path);
  }

  /** The request's token, verified for the mount's resource, with its DPoP proof when it is bound or sent as DPoP. */
  async authenticate(headers: HeaderBag, mountPath: string, method: string): Promise<Authenticated> {
    const mount = this.mounts.get(mountPath)!;
    const header = headers.authorization;
    if (header === undefined)
      return this.refuse('missing_token', challengeError('unauthorized', mount.challenges.missing()));
    const parsed = CREDENTIAL.exec(header);
    if (parsed === null)
      return this.refuse('malformed_token', this.invalid(mount, { scheme: undefined, error: 'invalid_token' }));
    const scheme: Scheme = parsed[1]!.toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer';
    const token = parsed[2]!;
    if (scheme === 'DPoP' && this.dpop === undefined)
      return this.refuse('dpop_off', this.invalid(mount, { scheme: undefined, error: 'invalid_token' }));
    if (scheme === 'Bearer' && this.mode === 'required')
      return this.refuse('dpop_required', this.invalid(mount, { scheme: undefined, error: 'invalid_token' }));
    const verified = await this.verifier.verify(token);
    if (!verified.ok) {
      // The issuer's keys or introspection could not be reached: not the client's fault, no challenge.
      if (verified.failure === 'unavailable') return this.refuse('unavailable', causewayError('auth_unavailable'));
      return this.refuse(verified.failure, this.invalid(mount, { scheme, error: 'invalid_token' }));
    }
    // A token for another mount of this server is another resource's token [RFC 8707].
    if (!verified.audiences.includes(mount.resource))
      return this.refuse('wrong_audience', this.invalid(mount, { scheme, error: 'invalid_token' }));
    if (scheme === 'Bearer') {
      // A sender-constrained token proves nothing without its proof [RFC 9449 §7.2].
      if (verified.jkt !== undefined)
        return this.refuse('bound_token', this.invalid(mount, { scheme, error: 'invalid_token' }));
    } else {
      const failure =
        verified.jkt === undefined
          ? 'dpop_unbound_token'
          : await this.dpop!.check({ proof: headers.dpop, method, url: mount.resource, token, jkt: verified.jkt });
      if (failure === 'unavailable') return this.refuse('unavailable', causewayError('auth_unavailable'));
      if (failure === 'dpop_nonce') {
        const challenge = mount.challenges.refused({ scheme, error: 'use_dpop_nonce' });
        return this.refuse(
          failure,
          challengeError('invalid_dpop_proof', challenge, 'A DPoP nonce is required', {
            'dpop-nonce': this.nonces!.current(),
          }),
        );
      }
      if (failure !== undefined) {
        const error = BINDING_FAILURES.has(failure) ? 'invalid_token' : 'invalid_dpop_proof';
        return this.refuse(failure, this.invalid(mount, { scheme, error }));
      }
    }
    // Hashed here, once: the front door carries it on, the subject tokens are kept by it.
    const principal = principalHash(this.principal, headers, verified.identity);
    this.subjects?.remember(principal, token, verified.expiresAt);
    return { ok: true, access: new Access(verified.identity, verified.scopes, this.rules, scheme), principal };
  }

  /** The DPoP-Nonce a DPoP request's answer carries, so the client's next proof has a fresh one. */
  nonceFor(access: Access): string | undefined {
    return access.scheme === 'DPoP' ? this.nonces?.current() : undefined;
  }

  /** The 403 for a request its scopes do not cover, naming every scope it needs; undefined when allowed. */
  authorize(access: Access, mountPath: string, method: string, name: string | undefined): CausewayError | undefined {
    const missing = access.missing(method, name);
    if (missing.length === 0) return undefined;
    this.onFailure('insufficient_scope');
    const challenge = this.mounts
      .get(mountPath)!
      .challenges.refused({ scheme: access.scheme, error: 'insufficient_scope', scopes: missing });
    return challengeError('insufficient_scope', challenge);
  }

  private invalid(mount: Protected, e: ChallengeError): CausewayError {
    return challengeError(
      e.error === 'invalid_dpop_proof' ? 'invalid_dpop_proof' : 'invalid_token',
      mount.challenges.refused(e),
    );
  }

  private refuse(failure: AuthFailure, error: CausewayError): Authenticated {
    this.onFailure(failure);
    return { ok: false, failure, error };
  }
}
