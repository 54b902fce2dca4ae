// auth.mode introspection against the introspection endpoint of a real authorization server
// (oidc-provider issuing opaque access tokens for the resource): active tokens for this resource
// reach the upstream, under their subject; inactive, foreign-audience or unknown tokens get the
// 401 challenge with nothing sent upstream; answers are cached by token, both ways. A DPoP-bound
// opaque token is held to the key the introspection answer's cnf.jkt names.

import t from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { dpopKey, protectedResource, startAuthorizationServer } from '../helpers/authorization-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { envelope } from '../mrtr/wire.js';

const { port, resource, elsewhere, metadataUrl } = await protectedResource();

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());
const as = await startAuthorizationServer(t, {
  resources: { [resource]: 'opaque', [elsewhere]: 'opaque' },
  scopes: ['mcp'],
  clients: ['causeway', 'alice', 'bob'],
});
const causeway = await startCauseway({
  'listen.port': port,
  'upstream.url': upstream.url,
  'principal.hashSecret': 'a-test-secret-of-32-characters!!',
  'auth.mode': 'introspection',
  'auth.issuer': as.issuer,
  'auth.resource': resource,
  'auth.introspectionUrl': as.introspectionUrl,
  'auth.introspectionClientId': 'causeway',
  'auth.introspectionClientSecret': as.secret('causeway'),
  'auth.rules': JSON.stringify({ '*': ['mcp'] }),
});
t.teardown(() => causeway.close());

async function call(method: string, params: Record<string, unknown>, token: string) {
  const { body, headers } = envelope(method, params);
  const res = await fetch(causeway.url, {
    method: 'POST',
    headers: { ...headers, authorization: `Bearer ${token}` },
    body,
  });
  return {
    status: res.status,
    challenge: res.headers.get('www-authenticate'),
    body: (await res.json()) as { result?: { content?: Array<{ text: string }> } },
  };
}

t.test(
  'modern_client-to-legacy_upstream-introspected: an opaque token for this resource lists and calls tools',
  async (t) => {
    const token = await as.token({ client: 'alice', resource });
    t.notMatch(token, /^ey/, 'an opaque token, not a JWT');
    const client = new Client(
      { name: 'e2e', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(causeway.url), { authProvider: { token: async () => token } }),
    );
    t.teardown(() => client.close());
    t.ok((await client.listTools()).tools.some((x) => x.name === 'echo'));
    const introspected = as.introspections;
    t.same((await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).content, [
      { type: 'text', text: 'hi' },
    ]);
    t.equal(as.introspections, introspected, 'the cached answer served the next request');
    t.notOk(upstream.stats().lastHeaders.authorization, "the client's token never goes upstream");
    t.notOk(
      causeway.logs.some((l) => l.includes(token)),
      'the token is in no log line',
    );
  },
);

t.test(
  'inactive, unknown and foreign-audience tokens: 401 invalid_token, nothing upstream, the refusal cached',
  async (t) => {
    upstream.resetStats();
    const foreign = await as.token({ client: 'alice', resource: elsewhere });
    for (const token of [foreign, 'no-such-token']) {
      const r = await call('tools/call', { name: 'echo', arguments: { text: 'x' } }, token);
      t.equal(r.status, 401);
      t.equal(
        r.challenge,
        `Bearer error="invalid_token", scope="mcp", resource_metadata="${metadataUrl}", DPoP ` +
          `scope="mcp", algs="ES256 RS256 PS256 EdDSA", resource_metadata="${metadataUrl}"`,
      );
    }
    const introspected = as.introspections;
    t.equal((await call('server/discover', {}, 'no-such-token')).status, 401);
    t.equal(as.introspections, introspected, 'an inactive answer is reused');
    t.same(upstream.stats().requestsByMethod, {}, 'nothing upstream');
  },
);

t.test('the principal is the subject the introspection names', async (t) => {
  const count = async (token: string) =>
    (await call('tools/call', { name: 'counter', arguments: {} }, token)).body.result?.content?.[0]?.text;
  t.equal(await count(await as.token({ client: 'bob', resource })), '1');
  t.equal(
    await count(await as.token({ client: 'bob', resource })),
    '2',
    'another token of the same subject: the same session',
  );
  t.equal(await count(await as.token({ client: 'alice', resource })), '1', 'another subject: its own');
});

t.test(
  'a DPoP-bound opaque token: served with a proof of the key the ' +
    'introspection names, refused as Bearer or with another key',
  async (t) => {
    const key = await dpopKey('ES256');
    const token = await as.token({ client: 'alice', resource, dpop: key });
    const send = async (authorization: string, dpop?: string) => {
      const { body, headers } = envelope('tools/call', { name: 'echo', arguments: { text: 'bound' } });
      const res = await fetch(causeway.url, {
        method: 'POST',
        headers: { ...headers, authorization, ...(dpop === undefined ? {} : { dpop }) },
        body,
      });
      await res.body?.cancel();
      return res.status;
    };
    upstream.resetStats();
    t.equal(await send(`Bearer ${token}`), 401, 'as Bearer: 401');
    t.equal(
      await send(`DPoP ${token}`, await (await dpopKey('ES256')).proof('POST', resource, token)),
      401,
      'with a proof by another key: 401',
    );
    t.same(upstream.stats().requestsByMethod, {}, 'nothing upstream');
    t.equal(await send(`DPoP ${token}`, await key.proof('POST', resource, token)), 200, 'with its own key: served');
  },
);
