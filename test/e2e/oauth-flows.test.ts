// The real 2.4.0 client, pinned to 2026-07-28 and starting without a token, logs in through
// Causeway's challenge on its own: its first request (server/discover) gets the 401, it reads
// the Protected Resource Metadata the challenge names, then the authorization server's metadata,
// gets a token from a real oidc-provider, retries and calls a tool. The upstream never sees the
// client's Authorization or DPoP header.

import t, { type Test } from 'tap';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { protectedResource, startAuthorizationServer } from '../helpers/authorization-server.js';
import { startCauseway } from '../helpers/causeway.js';

const { port, resource, metadataUrl } = await protectedResource();

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());
const as = await startAuthorizationServer(t, {
  resources: { [resource]: 'jwt' },
  scopes: ['mcp'],
  clients: ['machine', 'bound-machine'],
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
  method: string;
  url: string;
  status: number;
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
      method: init.method ?? 'GET',
      url: String(url),
      status: res.status,
      authorization: headers.get('authorization'),
      dpop: headers.get('dpop'),
      mcpMethod: headers.get('mcp-method'),
    });
    return res;
  };
}

function newClient(): Client {
  return new Client({ name: 'oauth-e2e', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} });
}

async function connect(t: Test, provider: OAuthClientProvider, seen: Seen[]): Promise<Client> {
  const client = newClient();
  await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url), { authProvider: provider, fetch: recordingFetch(seen) }));
  t.teardown(() => client.close());
  return client;
}

const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

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

function assertUpstreamClean(t: Test): void {
  const counts = upstream.stats().headerCounts;
  t.ok(Object.keys(counts).length > 0, 'the upstream was reached');
  t.equal(counts.authorization ?? 0, 0, 'no request upstream carried Authorization');
  t.equal(counts.dpop ?? 0, 0, 'no request upstream carried DPoP');
}

t.beforeEach(() => upstream.resetStats());

t.test('client credentials: from the 401 to a tool call', async (t) => {
  const seen: Seen[] = [];
  const provider = new ClientCredentialsProvider({ clientId: 'machine', clientSecret: as.secret('machine'), expectedIssuer: as.issuer });
  const client = await connect(t, provider, seen);
  assertDiscovery(t, seen);
  t.equal(as.issued('client_credentials', 'machine'), 1, 'one token issued');
  const token = provider.tokens()!.access_token;
  t.same([claims(token).aud, claims(token).sub], [resource, 'machine'], 'for this resource, as the client');
  t.same((await client.callTool({ name: 'echo', arguments: { text: 'cc' } })).content, [{ type: 'text', text: 'cc' }]);
  t.ok(seen.filter((s) => s.url === causeway.url && s.status === 200).every((s) => s.authorization === `Bearer ${token}`), 'each served request carried the token as Bearer');
  assertUpstreamClean(t);
});
