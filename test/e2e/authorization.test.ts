// Causeway as the OAuth 2.1 resource server of its 2026 face, against a real authorization
// server (oidc-provider issuing JWT access tokens for resource indicators) and the real 2.4.0
// client: good tokens reach the upstream and never go further; every bad one is a 401 with its
// challenge before anything is sent upstream; scopes gate calls (403) and filter lists; the
// metadata is where the challenge says; the principal is the token's iss + sub; keys rotate.

import t from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { protectedResource, startAuthorizationServer } from '../helpers/authorization-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { envelope } from '../mrtr/wire.js';

const { port, resource, elsewhere, metadataUrl } = await protectedResource();

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());
const as = await startAuthorizationServer(t, {
  resources: { [resource]: 'jwt', [elsewhere]: 'jwt' },
  scopes: ['mcp', 'mcp:admin'],
  clients: ['alice', 'bob', 'carol', 'dave', 'erin'],
  expiring: ['erin'],
});
const stranger = await startAuthorizationServer(t, {
  resources: { [resource]: 'jwt' },
  scopes: ['mcp', 'mcp:admin'],
  clients: ['alice'],
});
const causeway = await startCauseway({
  'listen.port': port,
  'upstream.url': upstream.url,
  'cache.ttlMs': 5000,
  'cache.scope': 'public',
  'principal.hashSecret': 'a-test-secret-of-32-characters!!',
  'auth.mode': 'jwt',
  'auth.issuer': as.issuer,
  'auth.jwksUrl': as.jwksUrl,
  'auth.resource': resource,
  // Every unknown kid fetches the JWKS again: the rotation test counts fetches, not seconds.
  'auth.jwksCooldownMs': 0,
  'auth.rules': JSON.stringify({
    '*': ['mcp'],
    'tools/call test_*': ['mcp:admin'],
    'resources/read test://template/*': ['mcp:admin'],
  }),
});
t.teardown(() => causeway.close());

// Every request needs mcp (the `*` rule): each challenge names it, so a client asks for it at login.
const DPOP = `DPoP scope="mcp", algs="ES256 RS256 PS256 EdDSA", resource_metadata="${metadataUrl}"`;
const admin = await as.token({ client: 'alice', resource, scope: 'mcp mcp:admin' });

async function modernClient(token: string): Promise<Client> {
  const client = new Client(
    { name: 'e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(causeway.url), { authProvider: { token: async () => token } }),
  );
  t.teardown(() => client.close());
  return client;
}

interface Answer {
  status: number;
  challenge: string | null;
  body: { id?: unknown; error?: { code: number; message: string }; result?: Record<string, unknown> };
}

async function call(method: string, params: Record<string, unknown>, authorization?: string): Promise<Answer> {
  const { body, headers } = envelope(method, params);
  if (authorization !== undefined) headers.authorization = authorization;
  const res = await fetch(causeway.url, { method: 'POST', headers, body });
  return {
    status: res.status,
    challenge: res.headers.get('www-authenticate'),
    body: (await res.json()) as Answer['body'],
  };
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const claims = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

async function failures(): Promise<Record<string, number>> {
  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^causeway_auth_failures_total\{reason="([a-z_]+)"\} (\d+)$/gm))
    out[m[1]!] = Number(m[2]);
  return out;
}

t.test('modern_client-to-legacy_upstream-with-token: the 2.4.0 client lists and calls tools', async (t) => {
  const client = await modernClient(admin);
  const names = (await client.listTools()).tools.map((x) => x.name);
  t.ok(names.includes('echo') && names.includes('test_simple_text'), 'every tool listed for an admin token');
  const r = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  t.same(r.content, [{ type: 'text', text: 'hi' }]);
  t.notOk(upstream.stats().lastHeaders.authorization, "the client's token never goes upstream");
  t.notOk(
    causeway.logs.some((l) => l.includes(admin)),
    'the token is in no log line',
  );
});

t.test('bad tokens: 401 with the challenge, nothing sent upstream', async (t) => {
  const good = claims(admin);
  const [header, , signature] = admin.split('.');
  const cases: Array<{ what: string; authorization?: string; reason: string }> = [
    { what: 'no token', reason: 'missing_token' },
    {
      what: 'another audience',
      authorization: `Bearer ${await as.token({ client: 'alice', resource: elsewhere })}`,
      reason: 'wrong_audience',
    },
    {
      what: 'another issuer',
      authorization: `Bearer ${await stranger.token({ client: 'alice', resource })}`,
      reason: 'unknown_key',
    },
    { what: 'expired', authorization: `Bearer ${await as.token({ client: 'erin', resource })}`, reason: 'expired' },
    {
      what: 'alg none',
      authorization: `Bearer ${b64({ alg: 'none', typ: 'at+jwt' })}.${b64(good)}.`,
      reason: 'disallowed_algorithm',
    },
    {
      what: 'tampered',
      authorization: `Bearer ${header}.${b64({ ...good, sub: 'bob' })}.${signature}`,
      reason: 'bad_signature',
    },
    { what: 'not a JWT', authorization: 'Bearer not-a-jwt', reason: 'malformed_token' },
    {
      what: 'another scheme',
      authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}`,
      reason: 'malformed_token',
    },
  ];
  const before = await failures();
  upstream.resetStats();
  for (const c of cases) {
    const r = await call('tools/call', { name: 'echo', arguments: { text: 'x' } }, c.authorization);
    t.equal(r.status, 401, `${c.what}: 401`);
    const bearer =
      c.authorization === undefined
        ? `Bearer scope="mcp", resource_metadata="${metadataUrl}"`
        : `Bearer error="invalid_token", scope="mcp", resource_metadata="${metadataUrl}"`;
    // Both schemes are offered (auth.dpop allowed); the error goes on the one the request used [RFC 9449 §7.1].
    const expected =
      c.what === 'another scheme'
        ? `Bearer error="invalid_token", scope="mcp", resource_metadata="${metadataUrl}", ` +
          `DPoP error="invalid_token", ${DPOP.slice(5)}`
        : `${bearer}, ${DPOP}`;
    t.equal(r.challenge, expected, `${c.what}: the challenge`);
    t.same(
      r.body,
      {
        jsonrpc: '2.0',
        error: {
          code: -32600,
          message: c.authorization === undefined ? 'Authorization required' : 'Invalid access token',
        },
      },
      `${c.what}: the error body`,
    );
  }
  for (const method of ['GET', 'DELETE']) {
    const res = await fetch(causeway.url, {
      method,
      headers: { 'mcp-session-id': 'some-session', accept: 'text/event-stream' },
    });
    t.equal(res.status, 401, `legacy ${method} without a token: 401`);
    t.equal(res.headers.get('www-authenticate'), `Bearer scope="mcp", resource_metadata="${metadataUrl}", ${DPOP}`);
  }
  const stats = upstream.stats();
  t.equal(stats.initializeCount, 0, 'no initialize upstream');
  t.same(stats.requestsByMethod, {}, 'no request upstream');
  const after = await failures();
  const counted: Record<string, number> = {};
  for (const c of cases) counted[c.reason] = (counted[c.reason] ?? 0) + 1;
  counted.missing_token! += 2;
  for (const [reason, n] of Object.entries(counted))
    t.equal((after[reason] ?? 0) - (before[reason] ?? 0), n, `${reason} counted`);
});

t.test('the challenge leads to the Protected Resource Metadata, at both well-known URIs', async (t) => {
  const r = await call('server/discover', {});
  t.equal(
    r.status,
    401,
    'server/discover without a token gets the challenge like any method (auth.publicDiscover off)',
  );
  const url = /resource_metadata="([^"]+)"/.exec(r.challenge ?? '')?.[1];
  t.equal(url, metadataUrl);
  const expected = {
    resource,
    authorization_servers: [as.issuer],
    bearer_methods_supported: ['header'],
    scopes_supported: ['mcp', 'mcp:admin'],
    dpop_signing_alg_values_supported: ['ES256', 'RS256', 'PS256', 'EdDSA'],
  };
  for (const at of [url!, `http://127.0.0.1:${port}/.well-known/oauth-protected-resource`]) {
    // Clients send their discovery requests with whatever version header they have [AUTH-DISC].
    for (const version of ['2025-11-25', '2026-07-28', 'not-a-version', undefined]) {
      const res = await fetch(at, { headers: version === undefined ? {} : { 'mcp-protocol-version': version } });
      t.equal(res.status, 200, `${at} with MCP-Protocol-Version ${version}: 200 without a token`);
      t.same(await res.json(), expected, `${at} with MCP-Protocol-Version ${version}: the document`);
    }
  }
});

t.test('scope rules: 403 naming every scope needed; lists show only what may be called', async (t) => {
  const plain = await as.token({ client: 'alice', resource, scope: 'mcp' });
  const client = await modernClient(plain);
  const listed = await client.listTools();
  const names = listed.tools.map((x) => x.name);
  t.ok(names.includes('echo'), 'tools it may call are listed');
  t.same(
    names.filter((n) => n.startsWith('test_')),
    [],
    'tools it may not call are not',
  );
  const raw = await call('tools/list', {}, `Bearer ${plain}`);
  t.equal(raw.body.result?.cacheScope, 'private', 'a filtered list is private, whatever cache.scope says');
  const templates = async (c: Client) => (await c.listResourceTemplates()).resourceTemplates.map((x) => x.uriTemplate);
  t.same(await templates(client), [], 'a template is listed by the rules for a read of its uriTemplate');
  t.same(
    await templates(await modernClient(admin)),
    ['test://template/{id}/data'],
    'and is there for a token with the scope',
  );

  const calls = upstream.stats().toolCalls.test_simple_text ?? 0;
  const denied = await call('tools/call', { name: 'test_simple_text', arguments: {} }, `Bearer ${plain}`);
  t.equal(denied.status, 403);
  t.equal(
    denied.challenge,
    `Bearer error="insufficient_scope", scope="mcp mcp:admin", resource_metadata="${metadataUrl}", ${DPOP}`,
  );
  t.same(denied.body, { jsonrpc: '2.0', id: denied.body.id, error: { code: -32600, message: 'Insufficient scope' } });
  t.ok(denied.body.id !== undefined, 'the request id is echoed');
  t.equal(upstream.stats().toolCalls.test_simple_text ?? 0, calls, 'the call never went upstream');

  const adminOnly = await as.token({ client: 'alice', resource, scope: 'mcp:admin' });
  const discover = await call('server/discover', {}, `Bearer ${adminOnly}`);
  t.equal(discover.status, 403, 'a method every rule covers needs its scope too');
  t.match(discover.challenge, /scope="mcp"/);
});

t.test(
  'legacy_client-to-legacy_upstream-with-token: the session belongs to the subject; scopes hold there too',
  async (t) => {
    const token = await as.token({ client: 'alice', resource, scope: 'mcp' });
    const transport = new LegacyTransport(new URL(causeway.url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    const client = new LegacyClient({ name: 'legacy-e2e', version: '1.0.0' });
    await client.connect(transport);
    t.teardown(() => client.close());
    t.same((await client.callTool({ name: 'echo', arguments: { text: 'old' } })).content, [
      { type: 'text', text: 'old' },
    ]);
    const calls = upstream.stats().toolCalls.test_simple_text ?? 0;
    await t.rejects(
      client.callTool({ name: 'test_simple_text', arguments: {} }),
      { code: 403 },
      'a call its scopes do not cover is refused',
    );
    t.equal(upstream.stats().toolCalls.test_simple_text ?? 0, calls, 'and never sent upstream');
    const sessionId = transport.sessionId!;
    const stranger = await as.token({ client: 'bob', resource, scope: 'mcp' });
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'ping' });
    const legacyHeaders = {
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const bareCalls = upstream.stats().requestsByMethod.ping ?? 0;
    const barePost = await fetch(causeway.url, { method: 'POST', headers: legacyHeaders, body: ping });
    t.equal(barePost.status, 401, 'POST on the live session without the token: 401');
    await barePost.body?.cancel();
    const strangerPost = await fetch(causeway.url, {
      method: 'POST',
      headers: { ...legacyHeaders, authorization: `Bearer ${stranger}` },
      body: ping,
    });
    t.equal(strangerPost.status, 404, "POST: another subject's token does not reach the session");
    await strangerPost.body?.cancel();
    t.equal(upstream.stats().requestsByMethod.ping ?? 0, bareCalls, 'neither reached the upstream');
    for (const method of ['GET', 'DELETE']) {
      const bare = await fetch(causeway.url, {
        method,
        headers: { 'mcp-session-id': sessionId, accept: 'text/event-stream' },
      });
      t.equal(bare.status, 401, `${method} on the live session without the token: 401`);
      await bare.body?.cancel();
      const res = await fetch(causeway.url, {
        method,
        headers: { 'mcp-session-id': sessionId, accept: 'text/event-stream', authorization: `Bearer ${stranger}` },
      });
      t.equal(res.status, 404, `${method}: another subject's token does not reach the session`);
      await res.body?.cancel();
    }
    const refreshed = await as.token({ client: 'alice', resource, scope: 'mcp' });
    const own = await fetch(causeway.url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': sessionId, authorization: `Bearer ${refreshed}` },
    });
    t.equal(own.status, 200, 'a new token of the same subject does');
  },
);

t.test(
  'the principal is the token issuer and subject: two tokens ' +
    'of one subject share a session, another subject does not',
  async (t) => {
    const count = async (token: string) => {
      const r = await call('tools/call', { name: 'counter', arguments: {} }, `Bearer ${token}`);
      return (r.body.result!.content as Array<{ text: string }>)[0]!.text;
    };
    const first = await as.token({ client: 'carol', resource, scope: 'mcp' });
    const refreshed = await as.token({ client: 'carol', resource, scope: 'mcp' });
    t.not(first, refreshed, 'two distinct tokens');
    t.equal(await count(first), '1');
    t.equal(await count(refreshed), '2', 'a new token of the same subject finds its session');
    t.equal(await count(await as.token({ client: 'bob', resource, scope: 'mcp' })), '1', 'another subject has its own');
  },
);

t.test(
  'key rotation: a token signed with the new key is accepted after one JWKS fetch; the old key is gone',
  async (t) => {
    const old = await as.token({ client: 'dave', resource, scope: 'mcp' });
    t.equal((await call('server/discover', {}, `Bearer ${old}`)).status, 200, 'the old key works before rotation');
    await as.rotate(false);
    const fetched = as.jwksFetches;
    const fresh = await as.token({ client: 'dave', resource, scope: 'mcp' });
    t.not(
      JSON.parse(Buffer.from(fresh.split('.')[0]!, 'base64url').toString()).kid,
      JSON.parse(Buffer.from(old.split('.')[0]!, 'base64url').toString()).kid,
    );
    t.equal((await call('server/discover', {}, `Bearer ${fresh}`)).status, 200, 'the new key is accepted');
    t.equal(as.jwksFetches, fetched + 1, 'after one JWKS fetch');
    const before = await failures();
    const r = await call('server/discover', {}, `Bearer ${old}`);
    t.equal(r.status, 401, 'a token signed by the rotated-out key is refused');
    t.equal(r.challenge, `Bearer error="invalid_token", scope="mcp", resource_metadata="${metadataUrl}", ${DPOP}`);
    t.equal((await failures()).unknown_key, (before.unknown_key ?? 0) + 1);
  },
);
