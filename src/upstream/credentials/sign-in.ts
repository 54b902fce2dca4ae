// A user's own token at an upstream that wants one (credentials grant authorization_code):
// Causeway is that upstream's OAuth client. A request for a principal without a token gets the
// upstream_authorization_required error carrying a sign-in link (the authorization URL, PKCE S256,
// `resource`, a sealed `state` naming the principal); the pipeline turns it into a URL-mode
// elicitation round. Causeway is the configured client, else its Client ID Metadata Document
// (auth.clientMetadataUrl, where the server supports them), else a client it registers (RFC 7591,
// kept per issuer). Causeway's callback redeems the code (exact RFC 9207 `iss`, the verifier
// from the state) and keeps the token sealed in the grant store under upstream + principal hash,
// refreshed with its refresh token when it expires. It is sent only to that upstream, only for
// that principal, and never logged.

import * as oauth from 'oauth4webapi';
import { CausewayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { CredentialSpec } from '../../config/index.js';
import type { UpstreamAuthorization } from './credentials.js';
import type { GrantStore } from './grants.js';
import { credentialError, discover, register, tokenRequest } from './token-calls.js';
import type { AuthorizationServer, OAuthClient, TokenAnswer } from './token-calls.js';
import { BoundedMap } from '../../bounded.js';

/** Seals what Causeway hands out or keeps; the mrtr StateSealer is one. */
export interface Sealer {
  sealFor(purpose: string, value: unknown): string;
  openFor(purpose: string, sealed: string): unknown;
}

interface Grant {
  /** The client the token was issued to (a refresh is made as it). */
  c: string;
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
  /** The client id the authorization request was made as. */
  c: string;
  /** Principal hash. */
  p: string;
  /** PKCE code verifier. */
  v: string;
  /** Expiry, ms since the epoch. */
  e: number;
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
/** A registered client whose server names no expiry is kept this long. */
const REGISTRATION_TTL_MS = 365 * 24 * 3600_000;
const CLIENT_PURPOSE = 'causeway upstream client';
const MAX_CACHED = 10_000;

export interface SignInOptions {
  upstream: string;
  spec: CredentialSpec;
  /** Causeway's callback, as the user's browser reaches it: the redirect_uri. */
  callbackUrl: string;
  /** Causeway's Client ID Metadata Document URL; '' when there is none. */
  clientMetadataUrl: string;
  sealer: Sealer;
  grants: GrantStore;
  log: Logger;
}

export class UpstreamSignIn implements UpstreamAuthorization {
  private metadataFetch: Promise<AuthorizationServer> | undefined;
  /** Grants this replica read or made lately, by upstream|principal. */
  private readonly cached = new BoundedMap<string, Grant>(MAX_CACHED);
  private readonly refreshing = new Map<string, Promise<Grant | undefined>>();
  /** This replica's registration at the server, when it needed one. */
  private registration: Promise<OAuthClient> | undefined;

  constructor(private readonly opts: SignInOptions) {}

  async authorization(principal: string | undefined): Promise<string | undefined> {
    if (principal === undefined) return undefined;
    const grant = await this.grant(principal);
    return grant && `Bearer ${grant.a}`;
  }

  /**
   * The upstream refused the user's token, or wants one: a refused token that can be refreshed is
   * refreshed for one more try; otherwise the user signs in (again).
   */
  async refused(principal: string | undefined, sent: string | undefined, last: boolean): Promise<boolean> {
    if (principal !== undefined && sent !== undefined && (await this.forget(principal, sent, !last))) return true;
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
    try {
      // RFC 9207 §2.4: iss compared as is, before the code is used; a server that promises iss must send it.
      // The state is not compared: it opened, so it is Causeway's own.
      oauth.validateAuthResponse(md, { client_id: state.c }, query, oauth.skipStateCheck);
    } catch (err) {
      const text =
        err instanceof oauth.AuthorizationResponseError
          ? `The authorization server did not sign you in (${err.error.slice(0, 64)}).`
          : 'The sign-in answer does not come from the expected authorization server.';
      return { status: 400, text };
    }
    const code = query.get('code');
    if (!code) return { status: 400, text: 'The sign-in answer carries no code.' };
    const form = new URLSearchParams({ code, redirect_uri: this.opts.callbackUrl, code_verifier: state.v });
    if (this.opts.spec.resource !== '') form.set('resource', this.opts.spec.resource);
    const client = await this.clientById(state.c);
    if (!client)
      return {
        status: 400,
        text: 'The client this sign-in was made as is no longer known: call the tool again for a new link.',
      };
    let answer: TokenAnswer;
    try {
      answer = await tokenRequest(md, client, 'authorization_code', form, this.opts.log);
    } catch (err) {
      return { status: 502, text: (err as Error).message };
    }
    await this.keep(`${this.opts.upstream}|${state.p}`, grantOf(client.id, answer, undefined));
    this.opts.log.info('user signed in at the upstream');
    return {
      status: 200,
      text: `Signed in to ${this.opts.upstream}. You can close this window and go back to your client.`,
    };
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
    const form = new URLSearchParams({ refresh_token: grant.r! });
    if (this.opts.spec.resource !== '') form.set('resource', this.opts.spec.resource);
    try {
      const client = await this.clientById(grant.c);
      if (!client) throw credentialError('The client the grant was issued to is no longer known');
      const answer = await tokenRequest(await this.metadata(), client, 'refresh_token', form, this.opts.log);
      const fresh = grantOf(client.id, answer, grant.r);
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

  /** Forgets a refused token; with `refresh`, keeps its refresh token for the next use: true then. */
  private async forget(principal: string, sent: string, refresh: boolean): Promise<boolean> {
    const key = `${this.opts.upstream}|${principal}`;
    const grant = this.cached.get(key) ?? (await this.stored(key));
    if (!grant || `Bearer ${grant.a}` !== sent) return false;
    if (refresh && grant.r !== undefined) {
      this.remember(key, { ...grant, e: 0 });
      return true;
    }
    await this.drop(key);
    return false;
  }

  private async stored(key: string): Promise<Grant | undefined> {
    let sealed: string | undefined;
    try {
      sealed = await this.opts.grants.getGrant(key);
    } catch (err) {
      this.opts.log.warn(
        { err: (err as Error).message },
        'the grant store is unreachable; the user is asked to sign in',
      );
      return undefined;
    }
    const grant =
      sealed === undefined
        ? undefined
        : (this.opts.sealer.openFor(`${GRANT_PURPOSE} ${key}`, sealed) as Grant | undefined);
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
    this.cached.set(key, grant);
  }

  /** Who to be at the server for a new sign-in: configured, else a metadata document, else registered. */
  private async clientFor(md: AuthorizationServer): Promise<OAuthClient> {
    const { spec, clientMetadataUrl } = this.opts;
    if (spec.clientId !== '') return { id: spec.clientId, secret: spec.clientSecret };
    const documents = md.client_id_metadata_document_supported === true;
    if (documents && clientMetadataUrl !== '') return { id: clientMetadataUrl, secret: '' };
    if (md.registration_endpoint === undefined) {
      throw credentialError(
        'The upstream’s authorization server takes neither client metadata ' +
          'documents nor registrations, and no clientId is configured',
      );
    }
    this.registration ??= this.register(md).catch((err: unknown) => {
      this.registration = undefined;
      throw err;
    });
    return this.registration;
  }

  /** The client a sign-in or grant was made as, wherever it was registered. */
  private async clientById(id: string): Promise<OAuthClient | undefined> {
    const { spec, clientMetadataUrl } = this.opts;
    if (spec.clientId !== '' && id === spec.clientId) return { id, secret: spec.clientSecret };
    if (clientMetadataUrl !== '' && id === clientMetadataUrl) return { id, secret: '' };
    const mine = await this.registration?.catch(() => undefined);
    if (mine?.id === id) return mine;
    // Registered by another replica: each keeps its registration in the store, by issuer and id.
    const sealed = await this.opts.grants.getGrant(this.clientKey(id)).catch(() => undefined);
    return sealed === undefined
      ? undefined
      : (this.opts.sealer.openFor(`${CLIENT_PURPOSE} ${this.clientKey(id)}`, sealed) as OAuthClient | undefined);
  }

  /** Dynamic client registration [RFC 7591], the fallback: deprecated in 2026-07-28, still common. */
  private async register(md: AuthorizationServer): Promise<OAuthClient> {
    // A server refuses a registration naming a grant it does not have (it lists grants, refresh_token not among them).
    const refreshes = md.grant_types_supported?.includes('refresh_token') ?? true;
    const grants = refreshes ? undefined : { grant_types: ['authorization_code'] };
    const auth = { token_endpoint_auth_method: 'client_secret_basic' };
    const metadata = { ...clientMetadata(this.opts.callbackUrl), ...grants, ...auth };
    const body = await register(md, metadata, this.opts.log);
    const client = { id: body.client_id, secret: typeof body.client_secret === 'string' ? body.client_secret : '' };
    const until = body.client_secret_expires_at;
    const expires = typeof until === 'number' && until > 0 ? until * 1000 - Date.now() : REGISTRATION_TTL_MS;
    const key = this.clientKey(client.id);
    await this.opts.grants.putGrant(key, this.opts.sealer.sealFor(`${CLIENT_PURPOSE} ${key}`, client), expires);
    this.opts.log.info('registered at the upstream’s authorization server');
    return client;
  }

  /** Registrations are per authorization server, never reused at another [AUTH-REG]. */
  private clientKey(id: string): string {
    return `client|${this.opts.spec.issuer}|${id}`;
  }

  private async authorizationUrl(principal: string): Promise<string> {
    const md = await this.metadata();
    const client = await this.clientFor(md);
    const verifier = oauth.generateRandomCodeVerifier();
    const state: SignInState = {
      u: this.opts.upstream,
      c: client.id,
      p: principal,
      v: verifier,
      e: Date.now() + STATE_TTL_MS,
    };
    const url = new URL(md.authorization_endpoint!);
    const q = url.searchParams;
    q.set('response_type', 'code');
    q.set('client_id', client.id);
    q.set('redirect_uri', this.opts.callbackUrl);
    q.set('state', this.opts.sealer.sealFor(STATE_PURPOSE, state));
    q.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    q.set('code_challenge_method', 'S256');
    if (this.opts.spec.scope !== '') q.set('scope', this.opts.spec.scope);
    if (this.opts.spec.resource !== '') q.set('resource', this.opts.spec.resource);
    return url.toString();
  }

  private metadata(): Promise<AuthorizationServer> {
    this.metadataFetch ??= discover(this.opts.spec.issuer).catch((err: unknown) => {
      this.metadataFetch = undefined;
      this.opts.log.warn({ err: (err as Error).message }, 'upstream authorization server metadata unavailable');
      throw credentialError('The upstream’s authorization server metadata is unavailable', err);
    });
    return this.metadataFetch;
  }
}

/** What Causeway says of itself as a client: its metadata document, and its registration request. */
export function clientMetadata(callbackUrl: string): Record<string, unknown> {
  return {
    client_name: 'Causeway',
    redirect_uris: [callbackUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    application_type: 'web',
  };
}

function grantOf(client: string, answer: TokenAnswer, previousRefresh: string | undefined): Grant {
  const lifetime = answer.expiresInS === undefined ? DEFAULT_LIFETIME_MS : answer.expiresInS * 1000;
  const refresh = answer.refreshToken ?? previousRefresh;
  return { c: client, a: answer.token, e: Date.now() + lifetime, ...(refresh === undefined ? {} : { r: refresh }) };
}

/** Causeway's callback endpoint: finds the upstream a sign-in was for by its sealed state. */
export class SignInCallback {
  /** The callback's path on Causeway's listener. */
  readonly path: string;
  /** Causeway's Client ID Metadata Document and where it is served, when auth.clientMetadataUrl is set. */
  readonly client: { path: string; document: Record<string, unknown> } | undefined;

  constructor(
    callbackUrl: string,
    clientMetadataUrl: string,
    private readonly sealer: Sealer,
    private readonly upstreams: ReadonlyMap<string, UpstreamSignIn>,
  ) {
    this.path = new URL(callbackUrl).pathname;
    this.client =
      clientMetadataUrl === ''
        ? undefined
        : {
            path: new URL(clientMetadataUrl).pathname,
            document: {
              client_id: clientMetadataUrl,
              ...clientMetadata(callbackUrl),
              token_endpoint_auth_method: 'none',
            },
          };
  }

  async handle(query: URLSearchParams): Promise<{ status: number; text: string }> {
    const sealed = query.get('state');
    const state = sealed === null ? undefined : (this.sealer.openFor(STATE_PURPOSE, sealed) as SignInState | undefined);
    if (!state) return { status: 400, text: 'This sign-in link is not one of Causeway’s.' };
    if (state.e <= Date.now())
      return { status: 400, text: 'This sign-in link has expired: call the tool again for a new one.' };
    const signIn = this.upstreams.get(state.u);
    if (!signIn) return { status: 400, text: 'This sign-in link is for an upstream Causeway no longer serves.' };
    return signIn.redeem(state, query);
  }
}
