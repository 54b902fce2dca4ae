// A real OpenID provider (oidc-provider) on 127.0.0.1:0 for the resource server's tests: the
// client-credentials grant for a few confidential clients, DPoP-bound tokens (RFC 9449) on request, resource indicators (RFC 8707) whose
// access tokens are JWTs (or opaque, for introspection), introspection, and a key rotation that
// keeps the issuer and port. It counts the JWKS and introspection requests it answers. Closed
// when its test ends.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import Provider, { errors, type Configuration } from 'oidc-provider';
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
  /** Signs with a new key from now on; `keepOld` keeps publishing the previous ones. */
  rotate(keepOld: boolean): Promise<void>;
  close(): Promise<void>;
}

interface Owner {
  teardown(fn: () => Promise<void> | void): void;
}

async function signingKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, alg: 'RS256', use: 'sig', kid: `k-${Math.random().toString(36).slice(2, 10)}` };
}

export async function startAuthorizationServer(t: Owner, opts: AuthorizationServerOptions): Promise<AuthorizationServer> {
  let provider: Provider | undefined;
  let jwksFetches = 0;
  let introspections = 0;
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
  const secrets = new Map(opts.clients.map((c) => [c, `secret-of-${c}-${Math.random().toString(36).slice(2)}`]));
  let keys: JWK[] = [await signingKey()];

  const configure = (): Configuration => ({
    clients: opts.clients.map((client_id) => ({
      client_id,
      client_secret: secrets.get(client_id)!,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    jwks: { keys },
    scopes: [...opts.scopes],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          const format = opts.resources[indicator];
          if (format === undefined) throw new errors.InvalidTarget();
          return { scope: opts.scopes.join(' '), audience: indicator, accessTokenTTL: 300, accessTokenFormat: format };
        },
      },
    },
    formats: {
      customizers: {
        jwt: (_ctx, _token, jwt) => {
          if (opts.expiring?.includes(jwt.payload.client_id as string)) jwt.payload.exp = (jwt.payload.iat as number) - 120;
        },
      },
    },
  });
  const build = () => {
    provider = new Provider(issuer, configure());
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
    async token(req) {
      const body = new URLSearchParams({ grant_type: 'client_credentials', resource: req.resource, scope: req.scope ?? opts.scopes.join(' ') });
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${req.client}:${secrets.get(req.client)!}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
          ...(req.dpop ? { dpop: await req.dpop.proof('POST', `${issuer}/token`) } : {}),
        },
        body,
      });
      const json = (await res.json()) as { access_token?: string; token_type?: string; error?: string; error_description?: string };
      if (!json.access_token) throw new Error(`no token: ${json.error}: ${json.error_description}`);
      if (req.dpop && json.token_type !== 'DPoP') throw new Error(`a DPoP proof was sent, the token is ${json.token_type}`);
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
export async function protectedResource(): Promise<{ port: number; resource: string; elsewhere: string; metadataUrl: string }> {
  const port = await freePort();
  return {
    port,
    resource: `http://127.0.0.1:${port}/mcp`,
    elsewhere: 'https://elsewhere.example/mcp',
    metadataUrl: `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`,
  };
}
