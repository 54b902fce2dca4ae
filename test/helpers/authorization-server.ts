// A real OpenID provider (oidc-provider) on 127.0.0.1:0 for the resource server's tests: the
// client-credentials grant for a few confidential clients, on request the authorization-code
// grant with PKCE for public clients through the provider's own dev login and consent pages,
// DPoP-bound tokens (RFC 9449) on request, resource indicators (RFC 8707) whose
// access tokens are JWTs (or opaque, for introspection), introspection, and a key rotation that
// keeps the issuer and port. It counts the JWKS and introspection requests it answers. Closed
// when its test ends.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWK } from 'jose';
import Provider, { errors, type Configuration, type Context } from 'oidc-provider';
import { freePort } from './redis.js';

export interface AuthorizationServerOptions {
  /** Resource indicator -> token format. Tokens are asked for one of these. */
  resources: Record<string, 'jwt' | 'opaque'>;
  /** Scopes a token for any resource may get. */
  scopes: readonly string[];
  /** Confidential clients allowed the client-credentials grant; their id is the token's sub. */
  clients: readonly string[];
  /** Clients among them whose JWTs are issued already expired (exp two minutes before iat), signed like any other. */
  expiring?: readonly string[];
  /**
   * Clients among them also allowed RFC 8693 token exchange: a JWT access token of this server
   * (any of `resources`) for one to another resource, with the subject's `sub` and the client as `act`.
   */
  exchangers?: readonly string[];
  /**
   * Clients allowed the authorization-code grant with PKCE (public unless `confidential`), each
   * with its one redirect URI; turns on oidc-provider's dev interactions (a login form taking any account and
   * password, then a consent form).
   */
  interactive?: readonly InteractiveClient[];
  /** Open dynamic client registration (RFC 7591); the registered clients log in at the dev pages. */
  registration?: boolean;
  /**
   * Accept Client ID Metadata Documents as client ids, each fetched from where this maps its URL
   * (an https URL in the client id, served by a test process over loopback http).
   */
  clientMetadataDocuments?: (url: string) => string;
  /** Issue refresh tokens with every authorization code (for any scope, without offline_access). */
  refreshTokens?: boolean;
  /** A `tenant` claim on the JWTs issued to these clients, by client. */
  tenants?: Record<string, string>;
  /** Access token lifetimes in seconds by resource; 300 for the others. */
  lifetimes?: Record<string, number>;
}

export interface InteractiveClient {
  client: string;
  redirectUri: string;
  /** A confidential client (client_secret_basic, its secret from `secret(client)`), as a server is. */
  confidential?: boolean;
}

/**
 * An authorization code redeemed: the PKCE challenge of its authorization request and the verifier the token request
 * carried.
 */
export interface CodeGrant {
  client: string;
  codeChallenge?: string;
  codeChallengeMethod?: string;
  codeVerifier?: string;
}

export interface TokenRequest {
  client: string;
  resource: string;
  scope?: string;
  /** Bind the token to this key (RFC 9449): the token request carries a DPoP proof made with it. */
  dpop?: DpopKey;
}

/** A client's DPoP key pair, and proofs made with it. */
export interface DpopKey {
  publicJwk: JWK;
  proof(method: string, url: string, token?: string, claims?: Record<string, unknown>): Promise<string>;
}

export async function dpopKey(alg = 'ES256'): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return {
    publicJwk,
    proof: (method, url, token, claims = {}) =>
      new SignJWT({
        htm: method,
        htu: url,
        jti: randomUUID(),
        iat: Math.floor(Date.now() / 1000),
        ...(token === undefined ? {} : { ath: createHash('sha256').update(token).digest('base64url') }),
        ...claims,
      })
        .setProtectedHeader({ alg, typ: 'dpop+jwt', jwk: publicJwk })
        .sign(privateKey),
  };
}

export interface AuthorizationServer {
  issuer: string;
  jwksUrl: string;
  introspectionUrl: string;
  /** Every client's secret. */
  secret(client: string): string;
  token(req: TokenRequest): Promise<string>;
  /** JWKS documents served so far. */
  readonly jwksFetches: number;
  /** Introspection requests answered so far. */
  readonly introspections: number;
  /** Tokens issued so far, by grant type and client. */
  issued(grant: string, client: string): number;
  /** Authorization codes redeemed so far. */
  readonly codeGrants: readonly CodeGrant[];
  /** Signs with a new key from now on; `keepOld` keeps publishing the previous ones. */
  rotate(keepOld: boolean): Promise<void>;
  close(): Promise<void>;
}

interface Owner {
  teardown(fn: () => Promise<void> | void): void;
}

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

const publicOf = ({ kty, n, e, alg, use, kid }: JWK): JWK => ({ kty, n, e, alg, use, kid });

async function signingKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, alg: 'RS256', use: 'sig', kid: `k-${Math.random().toString(36).slice(2, 10)}` };
}

export async function startAuthorizationServer(
  t: Owner,
  opts: AuthorizationServerOptions,
): Promise<AuthorizationServer> {
  let provider: Provider | undefined;
  let jwksFetches = 0;
  let introspections = 0;
  const issued = new Map<string, number>();
  const codeGrants: CodeGrant[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/jwks') jwksFetches++;
    if (req.url === '/token/introspection') introspections++;
    if (!provider) {
      res.writeHead(503).end();
      return;
    }
    void provider.callback()(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const confidential = [
    ...opts.clients,
    ...(opts.interactive ?? []).filter((c) => c.confidential).map((c) => c.client),
  ];
  const secrets = new Map(confidential.map((c) => [c, `secret-of-${c}-${Math.random().toString(36).slice(2)}`]));
  let keys: JWK[] = [await signingKey()];

  const configure = (): Configuration => ({
    clients: [
      ...opts.clients.map((client_id) => ({
        client_id,
        client_secret: secrets.get(client_id)!,
        grant_types: opts.exchangers?.includes(client_id)
          ? ['client_credentials', TOKEN_EXCHANGE]
          : ['client_credentials'],
        redirect_uris: [] as string[],
        response_types: [] as string[],
        token_endpoint_auth_method: 'client_secret_basic',
      })),
      ...(opts.interactive ?? []).map(({ client, redirectUri, confidential }) => ({
        client_id: client,
        ...(confidential
          ? {
              application_type: 'web',
              client_secret: secrets.get(client)!,
              token_endpoint_auth_method: 'client_secret_basic',
            }
          : { application_type: 'native', token_endpoint_auth_method: 'none' }),
        grant_types: opts.refreshTokens ? ['authorization_code', 'refresh_token'] : ['authorization_code'],
        redirect_uris: [redirectUri],
        response_types: ['code'],
      })),
    ],
    jwks: { keys },
    scopes: [...opts.scopes],
    // Only the metadata documents are fetched, from loopback (which the provider's own guard refuses).
    ...(opts.clientMetadataDocuments
      ? {
          fetch: (url: string | URL, init: RequestInit & { dispatcher?: unknown }) => {
            const { dispatcher, ...rest } = init;
            void dispatcher;
            return fetch(opts.clientMetadataDocuments!(String(url)), rest);
          },
        }
      : {}),
    ...(opts.refreshTokens ? { issueRefreshToken: () => true } : {}),
    features: {
      devInteractions: {
        enabled:
          opts.interactive !== undefined || opts.registration === true || opts.clientMetadataDocuments !== undefined,
      },
      registration: { enabled: opts.registration === true },
      clientIdMetadataDocument: {
        enabled: opts.clientMetadataDocuments !== undefined,
        ...(opts.clientMetadataDocuments ? { ack: 'draft-02' } : {}),
      },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          const format = opts.resources[indicator];
          if (format === undefined) throw new errors.InvalidTarget();
          return {
            scope: opts.scopes.join(' '),
            audience: indicator,
            accessTokenTTL: opts.lifetimes?.[indicator] ?? 300,
            accessTokenFormat: format,
          };
        },
      },
    },
    // The subject of a token exchange, put on the token by exchange() below.
    extraTokenClaims: (ctx: Context & { exchangedFor?: string }) =>
      ctx.exchangedFor === undefined ? undefined : { exchangedFor: ctx.exchangedFor },
    formats: {
      customizers: {
        jwt: (_ctx, _token, jwt) => {
          if (opts.expiring?.includes(jwt.payload.client_id as string))
            jwt.payload.exp = (jwt.payload.iat as number) - 120;
          const tenant = opts.tenants?.[jwt.payload.client_id as string];
          if (tenant !== undefined) jwt.payload.tenant = tenant;
          const exchanged = jwt.payload.exchangedFor;
          if (typeof exchanged === 'string') {
            jwt.payload.sub = exchanged;
            jwt.payload.act = { sub: jwt.payload.client_id };
            delete jwt.payload.exchangedFor;
          }
        },
      },
    },
  });
  const build = () => {
    const p = new Provider(issuer, configure());
    p.on('grant.success', (ctx) => {
      const key = `${String(ctx.oidc.params?.grant_type)} ${ctx.oidc.client?.clientId}`;
      issued.set(key, (issued.get(key) ?? 0) + 1);
      const code = ctx.oidc.entities.AuthorizationCode;
      if (code) {
        const codeVerifier = ctx.oidc.params?.code_verifier as string | undefined;
        codeGrants.push({
          client: code.clientId,
          codeChallenge: code.codeChallenge,
          codeChallengeMethod: code.codeChallengeMethod,
          codeVerifier,
        });
      }
    });
    p.registerGrantType(TOKEN_EXCHANGE, (ctx) => exchange(p, ctx), [
      'subject_token',
      'subject_token_type',
      'requested_token_type',
      'resource',
      'audience',
      'scope',
    ]);
    provider = p;
  };
  // RFC 8693 §2: the subject token must be one of ours, unexpired; the new one is for `resource`.
  const exchange = async (p: Provider, ctx: Context) => {
    const params = ctx.oidc.params as Record<string, string | undefined>;
    if (params.subject_token_type !== ACCESS_TOKEN || params.subject_token === undefined)
      throw new errors.InvalidRequest('subject_token_type');
    let subject: string;
    try {
      const { payload } = await jwtVerify(params.subject_token, createLocalJWKSet({ keys: keys.map(publicOf) }), {
        issuer,
      });
      subject = payload.sub!;
    } catch {
      throw new errors.InvalidGrant('subject_token');
    }
    const resource = params.resource;
    if (resource === undefined || opts.resources[resource] !== 'jwt') throw new errors.InvalidTarget();
    (ctx as Context & { exchangedFor?: string }).exchangedFor = subject;
    const token = new p.ClientCredentials({ client: ctx.oidc.client, scope: params.scope ?? opts.scopes.join(' ') });
    token.resourceServer = new p.ResourceServer(resource, {
      scope: opts.scopes.join(' '),
      audience: resource,
      accessTokenTTL: 300,
      accessTokenFormat: 'jwt',
    });
    const value = await token.save();
    ctx.body = { access_token: value, issued_token_type: ACCESS_TOKEN, token_type: 'Bearer', expires_in: 300 };
  };
  build();

  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t.teardown(close);

  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    introspectionUrl: `${issuer}/token/introspection`,
    secret: (client) => secrets.get(client)!,
    get jwksFetches() {
      return jwksFetches;
    },
    get introspections() {
      return introspections;
    },
    issued: (grant, client) => issued.get(`${grant} ${client}`) ?? 0,
    codeGrants,
    async token(req) {
      const body = new URLSearchParams({
        grant_type: 'client_credentials',
        resource: req.resource,
        scope: req.scope ?? opts.scopes.join(' '),
      });
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${req.client}:${secrets.get(req.client)!}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
          ...(req.dpop ? { dpop: await req.dpop.proof('POST', `${issuer}/token`) } : {}),
        },
        body,
      });
      const json = (await res.json()) as {
        access_token?: string;
        token_type?: string;
        error?: string;
        error_description?: string;
      };
      if (!json.access_token) throw new Error(`no token: ${json.error}: ${json.error_description}`);
      if (req.dpop && json.token_type !== 'DPoP')
        throw new Error(`a DPoP proof was sent, the token is ${json.token_type}`);
      return json.access_token;
    },
    async rotate(keepOld) {
      keys = [await signingKey(), ...(keepOld ? keys : [])];
      build();
    },
    close,
  };
}

/** A resource on a free loopback port (Causeway listens there), another one elsewhere, and its metadata URL. */
export async function protectedResource(): Promise<{
  port: number;
  resource: string;
  elsewhere: string;
  metadataUrl: string;
}> {
  const port = await freePort();
  return {
    port,
    resource: `http://127.0.0.1:${port}/mcp`,
    elsewhere: 'https://elsewhere.example/mcp',
    metadataUrl: `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`,
  };
}

/** Causeway's settings for a JWT resource server of `as` at `resource`, listening on `port`. */
export function jwtFace(
  as: Pick<AuthorizationServer, 'issuer' | 'jwksUrl'>,
  port: number,
  resource: string,
): Record<string, string | number> {
  return {
    'listen.port': port,
    'principal.hashSecret': 'a-test-secret-of-32-characters!!',
    'auth.mode': 'jwt',
    'auth.issuer': as.issuer,
    'auth.jwksUrl': as.jwksUrl,
    'auth.resource': resource,
  };
}
