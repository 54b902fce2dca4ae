// The real 2.4.0 client, pinned to 2026-07-28 and starting without a token, logs in through
// Causeway's challenge on its own: its first request (server/discover) gets the 401, it reads
// the Protected Resource Metadata the challenge names, then the authorization server's metadata,
// gets a token from a real oidc-provider, retries and calls a tool. By client credentials, by
// authorization code with PKCE through a scripted login at the provider's own pages, and with a
// DPoP-bound token sent with fresh proofs. The upstream never sees the client's Authorization or
// DPoP header.

import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import {
  Client,
  ClientCredentialsProvider,
  DpopSession,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { scriptedLogin } from '../helpers/browser-login.js';
import { jwtFace, protectedResource, startAuthorizationServer } from '../helpers/authorization-server.js';
import { startCauseway } from '../helpers/causeway.js';

const { port, resource, metadataUrl } = await protectedResource();
const nonced = await protectedResource();
// Nothing listens there: the scripted browser stops at the redirect and reads the code from it.
const REDIRECT_URI = 'http://127.0.0.1/callback';

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());
const as = await startAuthorizationServer(t, {
  resources: { [resource]: 'jwt', [nonced.resource]: 'jwt' },
  scopes: ['mcp'],
  clients: ['machine', 'bound-machine'],
  interactive: [{ client: 'desktop-app', redirectUri: REDIRECT_URI }],
});
const causeway = await startCauseway({
  'listen.port': port,
  'upstream.url': upstream.url,
  'principal.hashSecret': 'a-test-secret-of-32-characters!!',
  'auth.mode': 'jwt',
  'auth.issuer': as.issuer,
  'auth.jwksUrl': as.jwksUrl,
  'auth.resource': resource,
  'auth.rules': JSON.stringify({ '*': ['mcp'] }),
});
t.teardown(() => causeway.close());

interface Seen {
  url: string;
  status: number;
  /** The DPoP-Nonce the answer carried. */
  nonce: string | null;
  authorization: string | null;
  dpop: string | null;
  mcpMethod: string | null;
}

/** The client's own fetch, recording what it sent and got; the SDK's OAuth and DPoP layers wrap it. */
function recordingFetch(seen: Seen[]): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init = {}) => {
    const res = await fetch(url, init);
    const headers = new Headers(init.headers);
    seen.push({
      url: String(url),
      status: res.status,
      nonce: res.headers.get('dpop-nonce'),
      authorization: headers.get('authorization'),
      dpop: headers.get('dpop'),
      mcpMethod: headers.get('mcp-method'),
    });
    return res;
  };
}

function newClient(): Client {
  return new Client(
    { name: 'oauth-e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
}

async function connect(t: Test, provider: OAuthClientProvider, seen: Seen[], url = causeway.url): Promise<Client> {
  const client = newClient();
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch(seen) }),
  );
  t.teardown(() => client.close());
  return client;
}

const claims = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

/** The discovery the client made before its first token: challenge, then both metadata documents. */
function assertDiscovery(t: Test, seen: Seen[]): void {
  const first = seen[0]!;
  t.equal(first.mcpMethod, 'server/discover', 'the first request is server/discover');
  t.equal(first.authorization, null, 'sent without a token');
  t.equal(first.status, 401, 'and answered 401');
  const urls = seen.map((s) => s.url);
  const prm = urls.indexOf(metadataUrl);
  t.ok(prm > 0, "the client fetched the Protected Resource Metadata at the challenge's resource_metadata");
  const asm = urls.findIndex((u) => u.startsWith(`${as.issuer}/.well-known/`));
  t.ok(asm > prm, 'then the authorization server metadata');
  const token = urls.indexOf(`${as.issuer}/token`);
  t.ok(token > asm, 'then asked for a token');
  const retried = seen.findIndex((s, i) => i > token && s.url === causeway.url && s.mcpMethod === 'server/discover');
  t.ok(retried > token && seen[retried]!.status === 200, 'and retried server/discover with it, answered 200');
}

/** Requests Causeway served (server/discover and the call at least), each with the token as Bearer. */
function assertBearer(t: Test, seen: Seen[], token: string): void {
  const served = seen.filter((s) => s.url === causeway.url && s.status === 200);
  t.ok(served.length >= 2, 'server/discover and the call were served');
  t.same(
    served.map((s) => s.authorization),
    served.map(() => `Bearer ${token}`),
    'each with the token as Bearer',
  );
}

function assertUpstreamClean(t: Test): void {
  const counts = upstream.stats().headerCounts;
  t.ok(Object.keys(counts).length > 0, 'the upstream was reached');
  t.equal(counts.authorization ?? 0, 0, 'no request upstream carried Authorization');
  t.equal(counts.dpop ?? 0, 0, 'no request upstream carried DPoP');
}

t.beforeEach(() => upstream.resetStats());

t.test('client credentials: from the 401 to a tool call', async (t) => {
  const seen: Seen[] = [];
  const provider = new ClientCredentialsProvider({
    clientId: 'machine',
    clientSecret: as.secret('machine'),
    expectedIssuer: as.issuer,
  });
  const client = await connect(t, provider, seen);
  assertDiscovery(t, seen);
  t.equal(as.issued('client_credentials', 'machine'), 1, 'one token issued');
  const token = provider.tokens()!.access_token;
  t.same([claims(token).aud, claims(token).sub], [resource, 'machine'], 'for this resource, as the client');
  t.same(
    (await client.callTool({ name: 'echo', arguments: { text: 'cc' } })).content,
    [{ type: 'text', text: 'cc' }],
    'the tool call is answered',
  );
  assertBearer(t, seen, token);
  assertUpstreamClean(t);
});

/** A public client that logs in in a browser: everything it must keep across the redirect, kept in memory. */
class BrowserLoginProvider implements OAuthClientProvider {
  private info: StoredOAuthClientInformation = { client_id: 'desktop-app', issuer: as.issuer };
  private saved?: StoredOAuthTokens;
  private verifier?: string;
  private discovery?: OAuthDiscoveryState;
  /** The query of the redirect back to the client, once the login is done. */
  callback?: URLSearchParams;

  constructor(private readonly login: (authorizationUrl: URL) => Promise<{ callback: URL }>) {}

  get redirectUrl(): string {
    return REDIRECT_URI;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'oauth-e2e',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation(): StoredOAuthClientInformation {
    return this.info;
  }
  saveClientInformation(info: StoredOAuthClientInformation): void {
    this.info = info;
  }
  tokens(): StoredOAuthTokens | undefined {
    return this.saved;
  }
  saveTokens(tokens: StoredOAuthTokens): void {
    this.saved = tokens;
  }
  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    this.callback = (await this.login(authorizationUrl)).callback.searchParams;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error('no code verifier saved');
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }
  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }
}

t.test('authorization code with PKCE: a scripted login, finishAuth, then a tool call', async (t) => {
  const seen: Seen[] = [];
  const pages: string[] = [];
  const prompts: string[] = [];
  const provider = new BrowserLoginProvider(async (url) => {
    pages.push(url.href);
    const done = await scriptedLogin(url, 'frank', REDIRECT_URI);
    prompts.push(...done.prompts);
    return done;
  });
  const transport = new StreamableHTTPClientTransport(new URL(causeway.url), {
    authProvider: provider,
    fetch: recordingFetch(seen),
  });
  const first = newClient();
  t.teardown(() => first.close());
  await t.rejects(first.connect(transport), UnauthorizedError, 'the first connect stops for the login');
  t.equal(pages.length, 1, 'the client sent its user to log in once');
  const asked = new URL(pages[0]!);
  t.equal(
    `${asked.origin}${asked.pathname}`,
    `${as.issuer}/auth`,
    "at the authorization server's authorization endpoint",
  );
  t.same(
    [
      asked.searchParams.get('response_type'),
      asked.searchParams.get('client_id'),
      asked.searchParams.get('resource'),
      asked.searchParams.get('code_challenge_method'),
    ],
    ['code', 'desktop-app', resource, 'S256'],
    'for a code for this resource, with an S256 challenge',
  );
  t.same(prompts, ['login', 'consent'], "the user went through the provider's login and consent forms");
  t.ok(provider.callback?.get('code'), 'and came back with a code');

  await transport.finishAuth(provider.callback!);
  const grants = as.codeGrants.filter((g) => g.client === 'desktop-app');
  t.equal(grants.length, 1, 'the code was redeemed once');
  const grant = grants[0]!;
  t.equal(grant.codeChallengeMethod, 'S256', 'by PKCE S256');
  t.equal(grant.codeChallenge, asked.searchParams.get('code_challenge'), 'the challenge is the one the client sent');
  t.ok(grant.codeVerifier, 'the token request carried a code_verifier');
  t.equal(
    createHash('sha256')
      .update(grant.codeVerifier ?? '')
      .digest('base64url'),
    grant.codeChallenge,
    'whose S256 is the challenge',
  );
  const token = provider.tokens()!.access_token;
  t.same(
    [claims(token).aud, claims(token).sub],
    [resource, 'frank'],
    'the token is for this resource, as the user who logged in',
  );

  const client = await connect(t, provider, seen);
  assertDiscovery(t, seen);
  t.same(
    (await client.callTool({ name: 'echo', arguments: { text: 'code' } })).content,
    [{ type: 'text', text: 'code' }],
    'the tool call is answered',
  );
  assertBearer(t, seen, token);
  assertUpstreamClean(t);
});

/**
 * The SDK's client-credentials provider with a DPoP key: its token request carries a proof, and so does every request
 * with the token.
 */
class DpopClientCredentialsProvider extends ClientCredentialsProvider {
  readonly session = DpopSession.create();
  dpop(): Promise<DpopSession> {
    return this.session;
  }
}

t.test('DPoP: a bound token from the 401 on, every call with Authorization: DPoP and a fresh proof', async (t) => {
  const seen: Seen[] = [];
  const provider = new DpopClientCredentialsProvider({
    clientId: 'bound-machine',
    clientSecret: as.secret('bound-machine'),
    expectedIssuer: as.issuer,
  });
  const client = await connect(t, provider, seen);
  assertDiscovery(t, seen);
  const tokenRequest = seen.find((s) => s.url === `${as.issuer}/token`)!;
  t.ok(tokenRequest.dpop, 'the token request carried a DPoP proof');
  const tokens = provider.tokens()!;
  t.equal(tokens.token_type, 'DPoP', 'the authorization server issued a DPoP token');
  t.same(claims(tokens.access_token).cnf, { jkt: (await provider.session).thumbprint }, "bound to the client's key");

  t.same(
    (await client.callTool({ name: 'echo', arguments: { text: 'bound' } })).content,
    [{ type: 'text', text: 'bound' }],
    'the tool call is answered',
  );
  const served = seen.filter((s) => s.url === causeway.url && s.status === 200);
  t.ok(served.length >= 2, 'server/discover and the call were served');
  const ath = createHash('sha256').update(tokens.access_token).digest('base64url');
  for (const s of served) {
    t.equal(s.authorization, `DPoP ${tokens.access_token}`, `${s.mcpMethod}: the token under the DPoP scheme`);
    const proof = claims(s.dpop ?? '..');
    t.same(
      [proof.htm, proof.htu, proof.ath],
      ['POST', resource, ath],
      `${s.mcpMethod}: a proof for this request and this token`,
    );
  }
  const jtis = served.map((s) => claims(s.dpop!).jti);
  t.equal(new Set(jtis).size, jtis.length, 'a fresh proof for each request');
  assertUpstreamClean(t);
});

t.test(
  'DPoP with server nonces: the client takes the nonce from the ' +
    '401 use_dpop_nonce, and each proof carries one Causeway issued',
  async (t) => {
    const strict = await startCauseway({
      ...jwtFace(as, nonced.port, nonced.resource),
      'upstream.url': upstream.url,
      'auth.dpopNonces': 'true',
    });
    t.teardown(() => strict.close());
    const seen: Seen[] = [];
    const provider = new DpopClientCredentialsProvider({
      clientId: 'bound-machine',
      clientSecret: as.secret('bound-machine'),
      expectedIssuer: as.issuer,
    });
    const client = await connect(t, provider, seen, strict.url);
    t.same(
      (await client.callTool({ name: 'echo', arguments: { text: 'nonce' } })).content,
      [{ type: 'text', text: 'nonce' }],
      'the tool call is answered',
    );
    const atCauseway = seen.filter((s) => s.url === strict.url && s.dpop !== null);
    const asked = atCauseway.findIndex((s) => s.status === 401);
    t.ok(asked >= 0 && atCauseway[asked]!.nonce, 'the first proof without a nonce got a 401 carrying one');
    const issued = new Set(atCauseway.map((s) => s.nonce).filter((n) => n !== null));
    const served = atCauseway.filter((s) => s.status === 200);
    t.ok(served.length >= 2, 'server/discover and the call were served');
    for (const s of served)
      t.ok(issued.has(claims(s.dpop!).nonce as string), `${s.mcpMethod}: its proof carried a nonce Causeway issued`);
    assertUpstreamClean(t);
  },
);
