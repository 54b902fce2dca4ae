// DPoP-bound access tokens (RFC 9449) at Causeway's door, against a real authorization server
// (oidc-provider with DPoP on) and the real 2.4.0 client: a bound token with its proof reaches
// the upstream, which sees neither Authorization nor DPoP; the bound token without its proof, a
// replayed proof (also at a second replica sharing Redis), a proof for another method or URL,
// by another key or for another token, are each a 401 with nothing sent upstream. With
// auth.dpop required, Bearer is refused and the metadata says so; auth.publicDiscover opens
// server/discover and nothing else. With auth.dpopNonces, a proof must carry a nonce Causeway issued.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { dpopKey, protectedResource, startAuthorizationServer, type DpopKey } from '../helpers/authorization-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { envelope } from '../mrtr/wire.js';

const { port, resource, metadataUrl } = await protectedResource();
const strict = await protectedResource();
const nonceAt = await protectedResource();

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());
const redis = await startRedis(t);
const as = await startAuthorizationServer(t, {
  resources: { [resource]: 'jwt', [strict.resource]: 'jwt', [nonceAt.resource]: 'jwt' },
  scopes: ['mcp'],
  clients: ['alice', 'bob'],
});
const common = {
  'upstream.url': upstream.url,
  // The replicas share the keys that seal requestState (required with the Redis store).
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
  'principal.hashSecret': 'a-test-secret-of-32-characters!!',
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'auth.mode': 'jwt',
  'auth.issuer': as.issuer,
  'auth.jwksUrl': as.jwksUrl,
};
// Two replicas of one public URL: the second listens elsewhere, as behind a balancer.
const causeway = await startCauseway({ ...common, 'listen.port': port, 'auth.resource': resource });
t.teardown(() => causeway.close());
const replica = await startCauseway({ ...common, 'auth.resource': resource });
t.teardown(() => replica.close());
const required = await startCauseway({
  ...common,
  'listen.port': strict.port,
  'auth.resource': strict.resource,
  'auth.dpop': 'required',
  'auth.publicDiscover': 'true',
});
t.teardown(() => required.close());

const key = await dpopKey('ES256');
const bound = await as.token({ client: 'alice', resource, dpop: key });

interface Answer {
  status: number;
  challenge: string | null;
  body: { error?: { code: number; message: string }; result?: Record<string, unknown> };
}

async function call(
  at: string,
  method: string,
  params: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<Answer> {
  const e = envelope(method, params);
  const res = await fetch(at, { method: 'POST', headers: { ...e.headers, ...headers }, body: e.body });
  return {
    status: res.status,
    challenge: res.headers.get('www-authenticate'),
    body: (await res.json()) as Answer['body'],
  };
}

const echo = { name: 'echo', arguments: { text: 'x' } };

async function failures(at: { adminUrl?: string }): Promise<Record<string, number>> {
  const text = await (await fetch(`${at.adminUrl!}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^causeway_auth_failures_total\{reason="([a-z_]+)"\} (\d+)$/gm))
    out[m[1]!] = Number(m[2]);
  return out;
}

/** A fetch that sends the provider's token under the DPoP scheme with a fresh proof for each request. */
function dpopFetch(k: DpopKey): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    const credential = headers.get('authorization');
    if (credential?.startsWith('Bearer ')) {
      const token = credential.slice('Bearer '.length);
      const method = init.method ?? 'GET';
      headers.set('authorization', `DPoP ${token}`);
      headers.set('dpop', await k.proof(method, String(url), token));
    }
    return fetch(url, { ...init, headers });
  };
}

t.test(
  'modern_client-to-legacy_upstream-with-dpop: the 2.4.0 client calls through with a bound token and fresh proofs',
  async (t) => {
    const client = new Client(
      { name: 'e2e', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(causeway.url), {
        authProvider: { token: async () => bound },
        fetch: dpopFetch(key),
      }),
    );
    t.teardown(() => client.close());
    t.ok(
      (await client.listTools()).tools.some((x) => x.name === 'echo'),
      'tools listed',
    );
    t.same((await client.callTool({ name: 'echo', arguments: { text: 'bound' } })).content, [
      { type: 'text', text: 'bound' },
    ]);
    const seen = upstream.stats().lastHeaders;
    t.notOk('authorization' in seen, 'no Authorization upstream');
    t.notOk('dpop' in seen, 'no DPoP upstream');
    t.notOk(
      causeway.logs.some((l) => l.includes(bound)),
      'the token is in no log line',
    );
  },
);

t.test('each misuse of a bound token or its proof: 401, nothing sent upstream', async (t) => {
  const other = await dpopKey('ES256');
  const otherToken = await as.token({ client: 'bob', resource, dpop: other });
  const used = await key.proof('POST', resource, bound);
  t.equal(
    (await call(causeway.url, 'tools/call', echo, { authorization: `DPoP ${bound}`, dpop: used })).status,
    200,
    'a proof is good once',
  );
  const usedAtA = await key.proof('POST', resource, bound);
  t.equal(
    (await call(causeway.url, 'tools/call', echo, { authorization: `DPoP ${bound}`, dpop: usedAtA })).status,
    200,
    'another is good once at one replica',
  );

  const DPOP = `DPoP algs="ES256 RS256 PS256 EdDSA", resource_metadata="${metadataUrl}"`;
  const BEARER = `Bearer resource_metadata="${metadataUrl}"`;
  const proofError =
    `${BEARER}, DPoP error="invalid_dpop_proof", algs="ES256 ` +
    `RS256 PS256 EdDSA", resource_metadata="${metadataUrl}"`;
  const cases: Array<{
    what: string;
    at?: typeof causeway;
    headers: Record<string, string>;
    reason: string;
    challenge: string;
  }> = [
    {
      what: 'the bound token as Bearer',
      headers: { authorization: `Bearer ${bound}` },
      reason: 'bound_token',
      challenge: `Bearer error="invalid_token", resource_metadata="${metadataUrl}", ${DPOP}`,
    },
    {
      what: 'a replayed proof',
      headers: { authorization: `DPoP ${bound}`, dpop: used },
      reason: 'dpop_replayed',
      challenge: proofError,
    },
    {
      what: 'a proof replayed at another replica',
      at: replica,
      headers: { authorization: `DPoP ${bound}`, dpop: usedAtA },
      reason: 'dpop_replayed',
      challenge: proofError,
    },
    {
      what: 'a proof for another method',
      headers: { authorization: `DPoP ${bound}`, dpop: await key.proof('GET', resource, bound) },
      reason: 'dpop_wrong_target',
      challenge: proofError,
    },
    {
      what: 'a proof for another URL',
      headers: {
        authorization: `DPoP ${bound}`,
        dpop: await key.proof('POST', 'https://elsewhere.example/mcp', bound),
      },
      reason: 'dpop_wrong_target',
      challenge: proofError,
    },
    {
      what: 'a proof signed by another key',
      headers: { authorization: `DPoP ${bound}`, dpop: await other.proof('POST', resource, bound) },
      reason: 'dpop_key_mismatch',
      challenge:
        `${BEARER}, DPoP error="invalid_token", algs="ES256 ` +
        `RS256 PS256 EdDSA", resource_metadata="${metadataUrl}"`,
    },
    {
      what: "a proof with another token's ath",
      headers: { authorization: `DPoP ${bound}`, dpop: await key.proof('POST', resource, otherToken) },
      reason: 'dpop_wrong_token',
      challenge: proofError,
    },
    {
      what: 'a proof from long ago',
      headers: {
        authorization: `DPoP ${bound}`,
        dpop: await key.proof('POST', resource, bound, { iat: Math.floor(Date.now() / 1000) - 3600 }),
      },
      reason: 'dpop_stale',
      challenge: proofError,
    },
    {
      what: 'no proof',
      headers: { authorization: `DPoP ${bound}` },
      reason: 'dpop_invalid_proof',
      challenge: proofError,
    },
  ];
  const before = { a: await failures(causeway), b: await failures(replica) };
  upstream.resetStats();
  for (const c of cases) {
    const r = await call((c.at ?? causeway).url, 'tools/call', echo, c.headers);
    t.equal(r.status, 401, `${c.what}: 401`);
    t.equal(r.challenge, c.challenge, `${c.what}: the challenge`);
    t.equal(r.body.error?.code, -32600, `${c.what}: the JSON-RPC error`);
  }
  t.same(upstream.stats().requestsByMethod, {}, 'nothing sent upstream');
  const after = { a: await failures(causeway), b: await failures(replica) };
  for (const c of cases) {
    const side = c.at === replica ? 'b' : 'a';
    const n = cases.filter((x) => x.reason === c.reason && (x.at === replica ? 'b' : 'a') === side).length;
    t.equal((after[side][c.reason] ?? 0) - (before[side][c.reason] ?? 0), n, `${c.what}: counted as ${c.reason}`);
  }
});

t.test(
  'auth.dpop required: Bearer refused, the metadata and the ' +
    'challenge say DPoP; auth.publicDiscover opens discover alone',
  async (t) => {
    const plain = await as.token({ client: 'alice', resource: strict.resource });
    const r = await call(required.url, 'tools/call', echo, { authorization: `Bearer ${plain}` });
    t.equal(r.status, 401, 'an unbound Bearer token is refused');
    t.equal(
      r.challenge,
      `DPoP error="invalid_token", algs="ES256 RS256 PS256 EdDSA", resource_metadata="${strict.metadataUrl}"`,
      'the challenge names DPoP alone',
    );
    const doc = (await (await fetch(strict.metadataUrl)).json()) as Record<string, unknown>;
    t.equal(doc.dpop_bound_access_tokens_required, true, 'the metadata says bound tokens are required');
    t.same(doc.dpop_signing_alg_values_supported, ['ES256', 'RS256', 'PS256', 'EdDSA']);

    const discover = await call(required.url, 'server/discover', {}, {});
    t.equal(discover.status, 200, 'server/discover answers without a token');
    t.ok(
      discover.body.result?.serverInfo !== undefined || discover.body.result?.capabilities !== undefined,
      'with its result',
    );
    const list = await call(required.url, 'tools/list', {}, {});
    t.equal(list.status, 401, 'tools/list still needs a token');
    const lied = await call(required.url, 'tools/list', {}, { 'mcp-method': 'server/discover' });
    t.equal(lied.status, 401, 'a header naming discover does not open another method');

    const k = await dpopKey('ES256');
    const token = await as.token({ client: 'alice', resource: strict.resource, dpop: k });
    const ok = await call(required.url, 'tools/call', echo, {
      authorization: `DPoP ${token}`,
      dpop: await k.proof('POST', strict.resource, token),
    });
    t.equal(ok.status, 200, 'a bound token with its proof is served');
  },
);

t.test(
  'auth.dpopNonces: a proof needs a nonce Causeway issued, learnt from the ' +
    '401 and renewed on every answer; every replica takes every replica’s',
  async (t) => {
    const at = nonceAt;
    const nonced = { ...common, 'auth.resource': at.resource, 'auth.dpopNonces': 'true' };
    const a = await startCauseway({ ...nonced, 'listen.port': at.port });
    t.teardown(() => a.close());
    const b = await startCauseway(nonced);
    t.teardown(() => b.close());
    const token = await as.token({ client: 'alice', resource: at.resource, dpop: key });
    const send = async (url: string, claims: Record<string, unknown> = {}) => {
      const e = envelope('tools/call', echo);
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          ...e.headers,
          authorization: `DPoP ${token}`,
          dpop: await key.proof('POST', at.resource, token, claims),
        },
        body: e.body,
      });
      await res.text();
      return {
        status: res.status,
        challenge: res.headers.get('www-authenticate'),
        nonce: res.headers.get('dpop-nonce'),
      };
    };
    const before = await failures(a);
    const first = await send(a.url);
    t.equal(first.status, 401, 'a proof without a nonce');
    t.match(first.challenge, /DPoP error="use_dpop_nonce"/);
    t.match(first.nonce, /^[a-z0-9]+\.[A-Za-z0-9_-]{22}$/, 'the 401 hands out a nonce');
    const ok = await send(a.url, { nonce: first.nonce });
    t.equal(ok.status, 200, 'the proof with it passes');
    t.ok(ok.nonce, 'and the answer carries the nonce for the next proof');
    t.equal((await send(b.url, { nonce: first.nonce })).status, 200, 'another replica takes it');
    const forged = await send(a.url, { nonce: `${first.nonce!.split('.')[0]}.${'A'.repeat(22)}` });
    t.equal(forged.status, 401, 'a nonce Causeway did not make is refused');
    t.match(forged.challenge, /use_dpop_nonce/);
    t.equal(((await failures(a)).dpop_nonce ?? 0) - (before.dpop_nonce ?? 0), 2, 'counted as dpop_nonce');
  },
);
