// Causeway's own credentials upstream, never the client's token: a protected legacy server (it
// accepts only JWTs of the authorization server addressed to it) behind Causeway, reached with a
// client-credentials token Causeway obtains once and reuses, or with an RFC 8693 exchange of each
// client's token (one per principal). Real oidc-provider, the real 2.4.0 and 1.32.2 clients.

import t from 'tap';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyServer, type LegacyServerHandle } from '../fixtures/legacy-server.js';
import { jwtFace, startAuthorizationServer, TOKEN_EXCHANGE } from '../helpers/authorization-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { freePort } from '../helpers/redis.js';
import { envelope } from '../mrtr/wire.js';

const UPSTREAM = 'https://legacy-upstream.example/mcp';
const port = await freePort();
const origin = `http://127.0.0.1:${port}`;
const ccResource = `${origin}/cc`;
const txResource = `${origin}/tx`;
const brokenResource = `${origin}/broken`;

const as = await startAuthorizationServer(t, {
  resources: { [ccResource]: 'jwt', [txResource]: 'jwt', [brokenResource]: 'jwt', [UPSTREAM]: 'jwt' },
  scopes: ['mcp'],
  clients: ['alice', 'bob', 'causeway'],
  exchangers: ['causeway'],
});
const keys = createRemoteJWKSet(new URL(as.jwksUrl));

/** A legacy server that takes only tokens of `as` for UPSTREAM, and remembers every one it took. */
async function protectedUpstream(): Promise<{
  server: LegacyServerHandle;
  seen: string[];
  revoked: Set<string>;
  refuseAll: boolean;
}> {
  const seen: string[] = [];
  const revoked = new Set<string>();
  const handle = { seen, revoked, refuseAll: false };
  const server = await startLegacyServer({
    authorize: async (authorization) => {
      const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
      if (token === undefined || revoked.has(token) || handle.refuseAll) return false;
      try {
        await jwtVerify(token, keys, { issuer: as.issuer, audience: UPSTREAM });
      } catch {
        return false;
      }
      seen.push(token);
      return true;
    },
  });
  t.teardown(() => server.close());
  return Object.assign(handle, { server });
}
const cc = await protectedUpstream();
const tx = await protectedUpstream();

const credentials = (grant: string, secret = as.secret('causeway')) => ({
  grant,
  tokenUrl: `${as.issuer}/token`,
  clientId: 'causeway',
  clientSecret: secret,
  resource: UPSTREAM,
  scope: 'mcp',
});
const causeway = await startCauseway({
  ...jwtFace(as, port, ccResource),
  upstreams: JSON.stringify({
    cc: { url: cc.server.url, credentials: credentials('client_credentials') },
    tx: { url: tx.server.url, credentials: credentials('token_exchange') },
    broken: { url: cc.server.url, credentials: credentials('client_credentials', 'not-the-secret') },
  }),
  mounts: JSON.stringify({
    '/cc': { upstreams: ['cc'] },
    '/tx': { upstreams: ['tx'] },
    '/broken': { upstreams: ['broken'] },
  }),
});
t.teardown(() => causeway.close());

const claims = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

async function modernClient(path: string, token: string): Promise<Client> {
  const client = new Client(
    { name: 'e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(path, origin), { authProvider: { token: async () => token } }),
  );
  t.teardown(() => client.close());
  return client;
}

t.test('the protected upstream refuses anything but a token of its own', async (t) => {
  const token = await as.token({ client: 'alice', resource: ccResource });
  for (const authorization of [undefined, `Bearer ${token}`]) {
    const res = await fetch(cc.server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(authorization ? { authorization } : {}),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    t.equal(res.status, 401, authorization ? "a client's token for Causeway is not the upstream's" : 'no token');
    await res.body?.cancel();
  }
});

t.test(
  'client credentials: one token of Causeway’s own for every client, fetched once, never the client’s',
  async (t) => {
    const before = as.issued('client_credentials', 'causeway');
    const aliceToken = await as.token({ client: 'alice', resource: ccResource });
    const bobToken = await as.token({ client: 'bob', resource: ccResource });
    const alice = await modernClient('/cc', aliceToken);
    t.same((await alice.callTool({ name: 'echo', arguments: { text: 'a' } })).content, [{ type: 'text', text: 'a' }]);
    const bob = await modernClient('/cc', bobToken);
    t.same((await bob.callTool({ name: 'echo', arguments: { text: 'b' } })).content, [{ type: 'text', text: 'b' }]);

    const legacy = new LegacyClient({ name: 'legacy-e2e', version: '1.0.0' });
    await legacy.connect(
      new LegacyTransport(new URL('/cc', origin), {
        requestInit: { headers: { authorization: `Bearer ${aliceToken}` } },
      }),
    );
    t.teardown(() => legacy.close());
    t.same(
      (await legacy.callTool({ name: 'echo', arguments: { text: 'old' } })).content,
      [{ type: 'text', text: 'old' }],
      'a legacy client too',
    );

    t.equal(as.issued('client_credentials', 'causeway') - before, 1, 'one token request for all of it');
    const used = new Set(cc.seen);
    t.equal(used.size, 1, 'the upstream saw one token');
    const [token] = used;
    t.notOk(used.has(aliceToken) || used.has(bobToken), 'never a client’s');
    t.match(claims(token!), { aud: UPSTREAM, client_id: 'causeway', sub: 'causeway' });
  },
);

t.test(
  'a token the upstream stops taking is replaced at once: one more try with a new one, modern and legacy',
  async (t) => {
    const aliceToken = await as.token({ client: 'alice', resource: ccResource });
    const before = as.issued('client_credentials', 'causeway');
    const revoke = () => cc.seen.forEach((tok) => cc.revoked.add(tok));

    revoke();
    const legacy = new LegacyClient({ name: 'legacy-e2e', version: '1.0.0' });
    await legacy.connect(
      new LegacyTransport(new URL('/cc', origin), {
        requestInit: { headers: { authorization: `Bearer ${aliceToken}` } },
      }),
    );
    t.teardown(() => legacy.close());
    t.same(
      (await legacy.callTool({ name: 'echo', arguments: { text: 'l' } })).content,
      [{ type: 'text', text: 'l' }],
      'the legacy client never saw the 401',
    );
    t.equal(as.issued('client_credentials', 'causeway') - before, 1, 'a new token for it');

    revoke();
    const alice = await modernClient('/cc', aliceToken);
    t.same(
      (await alice.callTool({ name: 'echo', arguments: { text: 'm' } })).content,
      [{ type: 'text', text: 'm' }],
      'nor the modern one',
    );
    t.equal(as.issued('client_credentials', 'causeway') - before, 2, 'and another one');
    const last = cc.seen.at(-1)!;
    t.notOk(cc.revoked.has(last), 'the upstream took the new token');
  },
);

t.test(
  'token exchange: each principal’s token exchanged once for one addressed to the upstream, on its behalf',
  async (t) => {
    const before = as.issued(TOKEN_EXCHANGE, 'causeway');
    const aliceToken = await as.token({ client: 'alice', resource: txResource });
    const alice = await modernClient('/tx', aliceToken);
    await alice.callTool({ name: 'echo', arguments: { text: '1' } });
    await alice.callTool({ name: 'echo', arguments: { text: '2' } });
    const bobToken = await as.token({ client: 'bob', resource: txResource });
    const bob = await modernClient('/tx', bobToken);
    t.same((await bob.callTool({ name: 'echo', arguments: { text: 'b' } })).content, [{ type: 'text', text: 'b' }]);

    t.equal(as.issued(TOKEN_EXCHANGE, 'causeway') - before, 2, 'one exchange per principal');
    const bySubject = new Map([...new Set(tx.seen)].map((tok) => [claims(tok).sub, claims(tok)]));
    t.same(
      [...bySubject.keys()].sort(),
      ['alice', 'bob'],
      'the upstream saw one token per user, each speaking for that user',
    );
    t.match(
      bySubject.get('alice'),
      { aud: UPSTREAM, act: { sub: 'causeway' } },
      'addressed to the upstream, with Causeway as the actor',
    );
    t.notOk(tx.seen.includes(aliceToken) || tx.seen.includes(bobToken), 'never a client’s own token');
    t.equal(tx.server.stats().initializeCount, 2, 'and each user has an upstream session of their own');
  },
);

t.test('an authorization server that refuses Causeway: 502 upstream credential error, nothing upstream', async (t) => {
  const token = await as.token({ client: 'alice', resource: brokenResource });
  const requests = cc.server.stats().requestsByMethod.initialize ?? 0;
  const { body, headers } = envelope('tools/list', {});
  const res = await fetch(`${origin}/broken`, {
    method: 'POST',
    headers: { ...headers, authorization: `Bearer ${token}` },
    body,
  });
  t.equal(res.status, 502);
  const json = (await res.json()) as { error: { code: number; message: string } };
  t.equal(json.error.code, -32603);
  t.match(json.error.message, /refused the token request \(invalid_client\)/);
  t.equal(cc.server.stats().requestsByMethod.initialize ?? 0, requests, 'no request went to the upstream');
});

t.test(
  'an upstream that refuses every token: one new token and one more try, then its 401 is the answer, not a loop',
  async (t) => {
    const aliceToken = await as.token({ client: 'alice', resource: ccResource });
    const alice = await modernClient('/cc', aliceToken);
    const before = as.issued('client_credentials', 'causeway');
    cc.refuseAll = true;
    t.teardown(() => {
      cc.refuseAll = false;
    });
    await t.rejects(alice.callTool({ name: 'echo', arguments: { text: 'x' } }), 'the call fails');
    t.equal(as.issued('client_credentials', 'causeway') - before, 1, 'one new token was fetched, not more');
    const res = await fetch(`${origin}/cc`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${aliceToken}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    t.equal(res.status, 401, "a legacy client gets the upstream's own 401 after the second try");
    await res.body?.cancel();
    // The modern call forgot the token refused last, so this request fetched one, then one more.
    t.equal(as.issued('client_credentials', 'causeway') - before, 3, 'at most two token requests for a request');
  },
);
