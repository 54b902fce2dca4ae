// A user's own token at an upstream that wants one (credentials grant authorization_code):
// Causeway is that upstream's OAuth client. A request for a principal without a token gets the
// upstream_authorization_required error carrying a sign-in link (the authorization URL, PKCE S256,
// `resource`, a sealed `state` naming the principal); the pipeline turns it into a URL-mode
// elicitation round. Causeway's callback redeems the code (exact RFC 9207 `iss`, the verifier
// from the state) and keeps the token sealed in the grant store under upstream + principal hash,
// refreshed with its refresh token when it expires. It is sent only to that upstream, only for
// that principal, and never logged.

import { createHash, randomBytes } from 'node:crypto';
import { request } from 'undici';
import { CausewayError } from '../errors.js';
import type { Logger } from '../log.js';
import { credentialError, tokenRequest, type CredentialSpec, type TokenAnswer, type UpstreamAuthorization } from './credentials.js';
import type { GrantStore } from './grants.js';

/** Seals what Causeway hands out or keeps; the mrtr StateSealer is one. */
export interface Sealer {
  sealFor(purpose: string, value: unknown): string;
  openFor(purpose: string, sealed: string): unknown;
}

interface Grant {
  /** The access token. */
  a: string;
  /** Its refresh token, when the server gave one. */
  r?: string;
  /** When the access token ends, ms since the epoch. */
  e: number;
}

interface SignInState {
  /** Upstream name. */
  u: string;
  /** Principal hash. */
  p: string;
  /** PKCE code verifier. */
  v: string;
  /** Expiry, ms since the epoch. */
  e: number;
}

interface ServerMetadata {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  /** RFC 9207: the server puts `iss` on every authorization response. */
  issOnResponse: boolean;
}

const STATE_PURPOSE = 'causeway sign-in state';
const GRANT_PURPOSE = 'causeway upstream grant';
/** How long a sign-in link stays good. */
const STATE_TTL_MS = 10 * 60_000;
/** A grant with a refresh token is kept this long (or until refused); one without, as long as its token lives. */
const REFRESHABLE_TTL_MS = 30 * 24 * 3600_000;
/** A token answer without expires_in is used this long. */
const DEFAULT_LIFETIME_MS = 3600_000;
/** A token this close to its end is refreshed before use. */
const EXPIRY_MARGIN_MS = 10_000;
const METADATA_TIMEOUT_MS = 10_000;
const MAX_CACHED = 10_000;

export interface SignInOptions {
  upstream: string;
  spec: CredentialSpec;
  /** Causeway's callback, as the user's browser reaches it: the redirect_uri. */
  callbackUrl: string;
  sealer: Sealer;
  grants: GrantStore;
  log: Logger;
}

export class UpstreamSignIn implements UpstreamAuthorization {
  private metadataFetch: Promise<ServerMetadata> | undefined;
  /** Grants this replica read or made lately, by upstream|principal. */
  private readonly cached = new Map<string, Grant>();
  private readonly refreshing = new Map<string, Promise<Grant | undefined>>();

  constructor(private readonly opts: SignInOptions) {}

  async authorization(principal: string | undefined): Promise<string | undefined> {
    if (principal === undefined) return undefined;
    const grant = await this.grant(principal);
    return grant && `Bearer ${grant.a}`;
  }

  /** The upstream refused the user's token, or wants one: the user signs in (again). */
  async refused(principal: string | undefined, sent: string | undefined): Promise<boolean> {
    if (principal !== undefined && sent !== undefined) await this.forget(principal, sent);
    throw await this.required(principal);
  }

  /** The error a request for `principal` is answered with while it has no token: it carries the sign-in link. */
  async required(principal: string | undefined): Promise<CausewayError> {
    if (principal === undefined) return credentialError('No principal to sign in at the upstream');
    const url = await this.authorizationUrl(principal);
    const message = `Sign in to ${this.opts.upstream} to go on`;
    return new CausewayError('upstream_authorization_required', message, { upstream: this.opts.upstream, url });
  }

  /** Redeems the code of a sign-in this upstream's state started; a message for the user's browser. */
  async redeem(state: SignInState, query: URLSearchParams): Promise<{ status: number; text: string }> {
    const md = await this.metadata();
    const iss = query.get('iss');
    // RFC 9207 §2.4: compared as is, before the code is used; a server that promises iss must send it.
    if (iss !== null ? iss !== md.issuer : md.issOnResponse) return { status: 400, text: 'The sign-in answer does not come from the expected authorization server.' };
    const error = query.get('error');
    if (error !== null) return { status: 400, text: `The authorization server did not sign you in (${error.slice(0, 64)}).` };
    const code = query.get('code');
    if (!code) return { status: 400, text: 'The sign-in answer carries no code.' };
    const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: this.opts.callbackUrl, code_verifier: state.v });
    if (this.opts.spec.resource !== '') form.set('resource', this.opts.spec.resource);
    let answer: TokenAnswer;
    try {
      answer = await tokenRequest(this.client(md), form, this.opts.log);
    } catch (err) {
      return { status: 502, text: (err as Error).message };
    }
    await this.keep(`${this.opts.upstream}|${state.p}`, grantOf(answer, undefined));
    this.opts.log.info({ upstream: this.opts.upstream }, 'user signed in at the upstream');
    return { status: 200, text: `Signed in to ${this.opts.upstream}. You can close this window and go back to your client.` };
  }

  private async grant(principal: string): Promise<Grant | undefined> {
    const key = `${this.opts.upstream}|${principal}`;
    const grant = this.cached.get(key) ?? (await this.stored(key));
    if (!grant) return undefined;
    if (grant.e > Date.now() + EXPIRY_MARGIN_MS) return grant;
    if (grant.r === undefined) {
      await this.drop(key);
      return undefined;
    }
    let p = this.refreshing.get(key);
    if (!p) {
      p = this.refresh(key, grant).finally(() => this.refreshing.delete(key));
      this.refreshing.set(key, p);
    }
    return p;
  }

  private async refresh(key: string, grant: Grant): Promise<Grant | undefined> {
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: grant.r! });
    if (this.opts.spec.resource !== '') form.set('resource', this.opts.spec.resource);
    try {
      const fresh = grantOf(await tokenRequest(this.client(await this.metadata()), form, this.opts.log), grant.r);
      await this.keep(key, fresh);
      return fresh;
    } catch {
      // Another replica may have refreshed it first (a rotated refresh token is good once).
      this.cached.delete(key);
      const now = await this.stored(key);
      if (now && now.r !== grant.r && now.e > Date.now() + EXPIRY_MARGIN_MS) return now;
      await this.drop(key);
      return undefined;
    }
  }

  private async forget(principal: string, sent: string): Promise<void> {
    const key = `${this.opts.upstream}|${principal}`;
    const grant = this.cached.get(key) ?? (await this.stored(key));
    if (grant && `Bearer ${grant.a}` === sent) await this.drop(key);
  }

  private async stored(key: string): Promise<Grant | undefined> {
    let sealed: string | undefined;
    try {
      sealed = await this.opts.grants.getGrant(key);
    } catch (err) {
      this.opts.log.warn({ err: (err as Error).message }, 'the grant store is unreachable; the user is asked to sign in');
      return undefined;
    }
    const grant = sealed === undefined ? undefined : (this.opts.sealer.openFor(`${GRANT_PURPOSE} ${key}`, sealed) as Grant | undefined);
    if (grant) this.remember(key, grant);
    return grant;
  }

  private async keep(key: string, grant: Grant): Promise<void> {
    this.remember(key, grant);
    const ttl = grant.r === undefined ? grant.e - Date.now() : REFRESHABLE_TTL_MS;
    // Sealed with its key as associated data: a grant copied under another principal does not open.
    await this.opts.grants.putGrant(key, this.opts.sealer.sealFor(`${GRANT_PURPOSE} ${key}`, grant), ttl);
  }

  private async drop(key: string): Promise<void> {
    this.cached.delete(key);
    await this.opts.grants.dropGrant(key).catch(() => undefined);
  }

  private remember(key: string, grant: Grant): void {
    this.cached.delete(key);
    if (this.cached.size >= MAX_CACHED) this.cached.delete(this.cached.keys().next().value!);
    this.cached.set(key, grant);
  }

  private client(md: ServerMetadata): Pick<CredentialSpec, 'tokenUrl' | 'clientId' | 'clientSecret'> {
    return { tokenUrl: md.tokenEndpoint, clientId: this.opts.spec.clientId, clientSecret: this.opts.spec.clientSecret };
  }

  private async authorizationUrl(principal: string): Promise<string> {
    const md = await this.metadata();
    const verifier = randomBytes(32).toString('base64url');
    const state: SignInState = { u: this.opts.upstream, p: principal, v: verifier, e: Date.now() + STATE_TTL_MS };
    const url = new URL(md.authorizationEndpoint);
    const q = url.searchParams;
    q.set('response_type', 'code');
    q.set('client_id', this.opts.spec.clientId);
    q.set('redirect_uri', this.opts.callbackUrl);
    q.set('state', this.opts.sealer.sealFor(STATE_PURPOSE, state));
    q.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'));
    q.set('code_challenge_method', 'S256');
    if (this.opts.spec.scope !== '') q.set('scope', this.opts.spec.scope);
    if (this.opts.spec.resource !== '') q.set('resource', this.opts.spec.resource);
    return url.toString();
  }

  private metadata(): Promise<ServerMetadata> {
    this.metadataFetch ??= discover(this.opts.spec.issuer).catch((err: unknown) => {
      this.metadataFetch = undefined;
      this.opts.log.warn({ err: (err as Error).message }, 'upstream authorization server metadata unavailable');
      throw credentialError('The upstream’s authorization server metadata is unavailable', err);
    });
    return this.metadataFetch;
  }
}

function grantOf(answer: TokenAnswer, previousRefresh: string | undefined): Grant {
  const lifetime = answer.expiresInS === undefined ? DEFAULT_LIFETIME_MS : answer.expiresInS * 1000;
  const refresh = answer.refreshToken ?? previousRefresh;
  return { a: answer.token, e: Date.now() + lifetime, ...(refresh === undefined ? {} : { r: refresh }) };
}

/** RFC 8414 metadata (path-inserted), else OpenID discovery; its issuer must be the one configured. */
async function discover(issuer: string): Promise<ServerMetadata> {
  const u = new URL(issuer);
  const path = u.pathname === '/' ? '' : u.pathname;
  const candidates = [`${u.origin}/.well-known/oauth-authorization-server${path}`, `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`];
  let last: unknown;
  for (const url of candidates) {
    try {
      const res = await request(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(METADATA_TIMEOUT_MS) });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`${url}: HTTP ${res.statusCode}`);
      }
      const md = (await res.body.json()) as Record<string, unknown>;
      if (md.issuer !== issuer) throw new Error(`${url}: issuer ${String(md.issuer)} is not ${issuer}`);
      if (typeof md.authorization_endpoint !== 'string' || typeof md.token_endpoint !== 'string') throw new Error(`${url}: no authorization or token endpoint`);
      const methods = md.code_challenge_methods_supported;
      if (!Array.isArray(methods) || !methods.includes('S256')) throw new Error(`${url}: PKCE S256 not supported`);
      return {
        issuer,
        authorizationEndpoint: md.authorization_endpoint,
        tokenEndpoint: md.token_endpoint,
        issOnResponse: md.authorization_response_iss_parameter_supported === true,
      };
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

/** Causeway's callback endpoint: finds the upstream a sign-in was for by its sealed state. */
export class SignInCallback {
  constructor(
    /** The callback's path on Causeway's listener. */
    readonly path: string,
    private readonly sealer: Sealer,
    private readonly upstreams: ReadonlyMap<string, UpstreamSignIn>,
  ) {}

  async handle(query: URLSearchParams): Promise<{ status: number; text: string }> {
    const sealed = query.get('state');
    const state = sealed === null ? undefined : (this.sealer.openFor(STATE_PURPOSE, sealed) as SignInState | undefined);
    if (!state) return { status: 400, text: 'This sign-in link is not one of Causeway’s.' };
    if (state.e <= Date.now()) return { status: 400, text: 'This sign-in link has expired: call the tool again for a new one.' };
    const signIn = this.upstreams.get(state.u);
    if (!signIn) return { status: 400, text: 'This sign-in link is for an upstream Causeway no longer serves.' };
    return signIn.redeem(state, query);
  }
}
