// Per-user upstream credentials: a legacy server that takes only its users' own tokens (JWTs of
// the authorization server addressed to it) behind Causeway, which is its OAuth client. A call
// without the user's token gets one URL-mode round pointing at the sign-in link; a scripted
// browser logs in at the real oidc-provider and comes back to Causeway's callback, which redeems
// the code (PKCE, RFC 9207 iss); the retry of the call carries the user's token, and no other user
// gets it. Two replicas share Redis: the round comes from one, the callback lands on the other.
// Without a configured client, Causeway is its Client ID Metadata Document where the server takes
// them, and otherwise registers (RFC 7591) at another server.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { jwtFace, startAuthorizationServer } from '../helpers/authorization-server.js';
import { scriptedLogin } from '../helpers/browser-login.js';
import { startCauseway } from '../helpers/causeway.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { rpc, type Json } from '../mrtr/wire.js';

const UPSTREAM = 'https://crm.example/mcp';
const DOCS = 'https://docs.example/mcp';
const WIKI = 'https://wiki.example/mcp';
const CLIENT_DOCUMENT = 'https://causeway.example/oauth/client';
const port = await freePort();
const origin = `http://127.0.0.1:${port}`;
const resource = `${origin}/mcp`;
const callbackUrl = `${origin}/oauth/callback`;

const as = await startAuthorizationServer(t, {
  resources: {
    [resource]: 'jwt',
    [`${origin}/docs`]: 'jwt',
    [`${origin}/wiki`]: 'jwt',
    [UPSTREAM]: 'jwt',
    [DOCS]: 'jwt',
  },
  scopes: ['mcp', 'crm'],
  clients: ['alice', 'bob'],
  interactive: [{ client: 'causeway-crm', redirectUri: callbackUrl, confidential: true }],
  // Causeway's document, served over TLS in production, is reached at the test's loopback port.
  clientMetadataDocuments: (url) => url.replace('https://causeway.example', origin),
  refreshTokens: true,
  // Short enough that a docs token is refreshed a few seconds after it was issued.
  lifetimes: { [DOCS]: 12 },
});
// The wiki's own authorization server: no metadata documents, open registration.
const wikiAs = await startAuthorizationServer(t, {
  resources: { [WIKI]: 'jwt' },
  scopes: ['wiki'],
  clients: [],
  registration: true,
});

/**
 * A legacy server taking only JWTs of `server` for `audience`: every token it took, and how many requests it refused.
 */
async function protectedUpstream(server: { issuer: string; jwksUrl: string }, audience: string) {
  const keys = createRemoteJWKSet(new URL(server.jwksUrl));
  const seen = { taken: [] as string[], refused: 0, revoked: new Set<string>() };
  const handle = await startLegacyServer({
    authorize: async (authorization) => {
      const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
      try {
        if (seen.revoked.has(token ?? '')) throw new Error('revoked');
        await jwtVerify(token ?? '', keys, { issuer: server.issuer, audience });
      } catch {
        seen.refused++;
        return false;
      }
      seen.taken.push(token!);
      return true;
    },
  });
  t.teardown(() => handle.close());
  return { url: handle.url, seen };
}
const crm = await protectedUpstream(as, UPSTREAM);
const docs = await protectedUpstream(as, DOCS);
const wiki = await protectedUpstream(wikiAs, WIKI);
const { taken } = crm.seen;

const redis = await startRedis(t);
const face = jwtFace(as, port, resource);
// Each replica is given its own port below.
delete face['listen.port'];
const settings = {
  ...face,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
  'auth.callbackUrl': callbackUrl,
  'auth.clientMetadataUrl': CLIENT_DOCUMENT,
  upstreams: JSON.stringify({
    crm: {
      url: crm.url,
      credentials: {
        grant: 'authorization_code',
        issuer: as.issuer,
        clientId: 'causeway-crm',
        clientSecret: as.secret('causeway-crm'),
        resource: UPSTREAM,
        scope: 'crm',
      },
    },
    docs: {
      url: docs.url,
      credentials: { grant: 'authorization_code', issuer: as.issuer, resource: DOCS, scope: 'crm' },
    },
    wiki: {
      url: wiki.url,
      credentials: { grant: 'authorization_code', issuer: wikiAs.issuer, resource: WIKI, scope: 'wiki' },
    },
  }),
  mounts: JSON.stringify({
    '/mcp': { upstreams: ['crm'] },
    '/docs': { upstreams: ['docs'] },
    '/wiki': { upstreams: ['wiki'] },
  }),
};
const causeway = await startCauseway({ ...settings, 'listen.port': port });
t.teardown(() => causeway.close());
// Another replica of the same public URL (as behind a balancer): it listens on a port of its own.
const replica = await startCauseway(settings);
t.teardown(() => replica.close());
const replicaOrigin = new URL(replica.url).origin;
const atReplica = `${replicaOrigin}/mcp`;

const claims = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
const URL_CAPS = { elicitation: { url: {} } };
const tokenOf = (client: string, mount = '/mcp') => as.token({ client, resource: `${origin}${mount}` });

async function call(
  token: string,
  params: Record<string, unknown>,
  caps: Record<string, unknown> = URL_CAPS,
  at = resource,
): Promise<{ status: number; body: Json }> {
  return rpc(
    at,
    'tools/call',
    { name: 'echo', arguments: { text: 'hi' }, ...params },
    { caps, headers: { authorization: `Bearer ${token}` } },
  );
}

/** The sign-in round of a call: its one URL-mode ask and the state to echo. */
function signInAsk(body: Json): { key: string; url: URL; requestState: string } {
  const result = body.result;
  const entries = Object.entries(result.inputRequests as Record<string, Json>);
  if (result.resultType !== 'input_required' || entries.length !== 1)
    throw new Error(`not a sign-in round: ${JSON.stringify(body)}`);
  const [key, ask] = entries[0]!;
  if (ask.method !== 'elicitation/create' || ask.params.mode !== 'url')
    throw new Error(`not a URL-mode ask: ${JSON.stringify(ask)}`);
  return { key, url: new URL(ask.params.url), requestState: result.requestState };
}

t.test(
  'a call without the user’s token: one URL-mode round, a sign-in, then the retry carries the user’s own token',
  async (t) => {
    const alice = await tokenOf('alice');
    const first = await call(alice, {}, URL_CAPS, atReplica);
    t.equal(first.status, 200);
    const ask = signInAsk(first.body);
    t.equal(`${ask.url.origin}${ask.url.pathname}`, `${as.issuer}/auth`, 'the link is the authorization endpoint');
    t.match(Object.fromEntries(ask.url.searchParams), {
      response_type: 'code',
      client_id: 'causeway-crm',
      redirect_uri: callbackUrl,
      resource: UPSTREAM,
      scope: 'crm',
      code_challenge_method: 'S256',
      code_challenge: /^[A-Za-z0-9_-]{43}$/,
      state: /.+/,
    });
    t.equal(taken.length, 0, 'the upstream took nothing yet');

    const again = await call(
      alice,
      { inputResponses: { [ask.key]: { action: 'accept' } }, requestState: ask.requestState },
      URL_CAPS,
      atReplica,
    );
    t.equal(
      signInAsk(again.body).url.searchParams.get('client_id'),
      'causeway-crm',
      'a retry before the sign-in finished gets the round again',
    );

    const { callback } = await scriptedLogin(ask.url, 'alice@crm', callbackUrl);
    t.equal(callback.searchParams.get('iss'), as.issuer, 'the server names itself on the callback (RFC 9207)');
    const forged = new URL(callback);
    forged.searchParams.set('iss', 'https://evil.example');
    const refusedForged = await fetch(forged);
    t.equal(refusedForged.status, 400, 'an answer naming another issuer is refused before the code is used');
    t.match(await refusedForged.text(), /expected authorization server/);
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${callback.searchParams.get('state')!.slice(0, -4)}AAAA`);
    t.equal((await fetch(tampered)).status, 400, 'a state Causeway did not seal is refused');

    const landed = await fetch(callback);
    t.equal(landed.status, 200, await landed.text());
    t.equal(callback.port, String(port), 'the callback landed on the other replica');
    t.equal(landed.headers.get('cache-control'), 'no-store');
    t.equal(landed.headers.get('referrer-policy'), 'no-referrer');
    t.match(
      as.codeGrants.at(-1),
      {
        client: 'causeway-crm',
        codeChallengeMethod: 'S256',
        codeChallenge: ask.url.searchParams.get('code_challenge'),
      },
      'redeemed with the verifier of its challenge',
    );

    const done = await call(
      alice,
      { inputResponses: { [ask.key]: { action: 'accept' } }, requestState: again.body.result.requestState },
      URL_CAPS,
      atReplica,
    );
    t.equal(done.status, 200);
    t.same(
      done.body.result.content,
      [{ type: 'text', text: 'hi' }],
      'the call went through, on the replica that made the round',
    );
    t.ok(taken.length > 0);
    t.match(
      claims(taken.at(-1)!),
      { sub: 'alice@crm', aud: UPSTREAM, client_id: 'causeway-crm' },
      'with the user’s own token for the upstream',
    );
    t.notOk(taken.includes(alice), 'never the client’s token');

    const later = await call(alice, { arguments: { text: 'later' } });
    t.same(
      later.body.result.content,
      [{ type: 'text', text: 'later' }],
      'later calls need no round, at either replica',
    );

    const legacy = new LegacyClient({ name: 'legacy-e2e', version: '1.0.0' });
    await legacy.connect(
      new LegacyTransport(new URL(resource), { requestInit: { headers: { authorization: `Bearer ${alice}` } } }),
    );
    t.teardown(() => legacy.close());
    t.same(
      (await legacy.callTool({ name: 'echo', arguments: { text: 'old' } })).content,
      [{ type: 'text', text: 'old' }],
      'the same user on a legacy client too',
    );
    t.ok(new Set(taken.map((tok) => claims(tok).sub)).size === 1, 'every token the upstream took is alice’s');
  },
);

t.test('another user does not get that token: their own round, their own sign-in', async (t) => {
  const bob = await tokenOf('bob');
  const before = taken.length;
  const first = await call(bob, {});
  const ask = signInAsk(first.body);
  t.equal(taken.length, before, 'nothing upstream in bob’s name');

  const discover = await rpc(resource, 'server/discover', {}, { headers: { authorization: `Bearer ${bob}` } });
  t.equal(discover.status, 403, 'what cannot ask for a sign-in is refused, with the link');
  t.match(discover.body.error, { code: -32600, data: { upstream: 'crm', url: new RegExp(`^${as.issuer}/auth\\?`) } });

  const noUrlMode = await call(bob, {}, { elicitation: { form: {} } });
  t.equal(noUrlMode.status, 400);
  t.match(
    noUrlMode.body.error,
    { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } },
    'a client without URL elicitation is told what it lacks',
  );

  const denied = new URL(callbackUrl);
  denied.search = new URLSearchParams({
    state: ask.url.searchParams.get('state')!,
    error: 'access_denied',
    iss: as.issuer,
  }).toString();
  const deniedAnswer = await fetch(denied);
  t.equal(deniedAnswer.status, 400, 'a user who refused consent is told so');
  t.match(await deniedAnswer.text(), /did not sign you in \(access_denied\)/);

  const { callback } = await scriptedLogin(ask.url, 'bob@crm', callbackUrl);
  t.equal((await fetch(callback)).status, 200);
  const done = await call(bob, { inputResponses: { [ask.key]: { action: 'accept' } }, requestState: ask.requestState });
  t.same(done.body.result.content, [{ type: 'text', text: 'hi' }]);
  t.equal(claims(taken.at(-1)!).sub, 'bob@crm', 'bob’s call carried bob’s token');
  t.ok(crm.seen.refused > 0, 'the upstream refused the tokenless tries');
});

/** Signs `account` in through the round of a call at `at`, as the user's browser would; returns the round. */
async function signIn(
  t: Test,
  token: string,
  at: string,
  account: string,
): Promise<{ key: string; url: URL; requestState: string }> {
  const first = await call(token, {}, URL_CAPS, at);
  if (first.body.result === undefined) throw new Error(`no round: ${first.status} ${JSON.stringify(first.body)}`);
  const ask = signInAsk(first.body);
  const { callback } = await scriptedLogin(ask.url, account, callbackUrl);
  const landed = await fetch(callback);
  t.equal(landed.status, 200, await landed.text());
  return ask;
}

t.test(
  'without a configured client: Causeway’s metadata document is ' +
    'its client id, and the user’s token is refreshed when it ends',
  async (t) => {
    const doc = await fetch(`${origin}/oauth/client`);
    t.equal(doc.status, 200);
    t.same(await doc.json(), {
      client_id: CLIENT_DOCUMENT,
      client_name: 'Causeway',
      redirect_uris: [callbackUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      application_type: 'web',
      token_endpoint_auth_method: 'none',
    });
    const alice = await tokenOf('alice', '/docs');
    const ask = await signIn(t, alice, `${origin}/docs`, 'alice@docs');
    t.equal(ask.url.searchParams.get('client_id'), CLIENT_DOCUMENT, 'the sign-in is made as the document');
    const done = await call(
      alice,
      { inputResponses: { [ask.key]: { action: 'accept' } }, requestState: ask.requestState },
      URL_CAPS,
      `${origin}/docs`,
    );
    t.same(done.body.result.content, [{ type: 'text', text: 'hi' }]);
    const first = docs.seen.taken.at(-1)!;
    t.match(claims(first), { sub: 'alice@docs', aud: DOCS, client_id: CLIENT_DOCUMENT });

    // Its 12 s token is refreshed once less than 10 s are left.
    await new Promise((r) => setTimeout(r, 2500)); // lower bound: the token ages past the refresh point
    const later = await call(alice, { arguments: { text: 'later' } }, URL_CAPS, `${origin}/docs`);
    t.same(later.body.result.content, [{ type: 'text', text: 'later' }], 'no new round');
    t.ok(as.issued('refresh_token', CLIENT_DOCUMENT) >= 1, 'the refresh token was used');
    const last = docs.seen.taken.at(-1)!;
    t.not(last, first, 'the upstream got a new token');
    t.match(claims(last), { sub: 'alice@docs', client_id: CLIENT_DOCUMENT });

    // The upstream stops taking the token (revoked early): one refresh and one more try, no new round.
    docs.seen.revoked.add(last);
    const refreshes = as.issued('refresh_token', CLIENT_DOCUMENT);
    const after = await call(alice, { arguments: { text: 'after' } }, URL_CAPS, `${origin}/docs`);
    t.same(
      after.body.result?.content,
      [{ type: 'text', text: 'after' }],
      'a refused token with a refresh token is refreshed, not asked for again',
    );
    t.equal(as.issued('refresh_token', CLIENT_DOCUMENT) - refreshes, 1);
    t.not(docs.seen.taken.at(-1), last);
  },
);

t.test(
  'a server without metadata documents: Causeway registers there, and every replica finds the registration',
  async (t) => {
    const bob = await tokenOf('bob', '/wiki');
    const ask = await signIn(t, bob, `${replicaOrigin}/wiki`, 'bob@wiki');
    const registered = ask.url.searchParams.get('client_id')!;
    t.not(registered, CLIENT_DOCUMENT);
    t.match(registered, /.+/, 'a client id the server gave');
    const done = await call(
      bob,
      { inputResponses: { [ask.key]: { action: 'accept' } }, requestState: ask.requestState },
      URL_CAPS,
      `${replicaOrigin}/wiki`,
    );
    t.same(
      done.body.result.content,
      [{ type: 'text', text: 'hi' }],
      'the callback at the other replica redeemed the code as the registered client',
    );
    t.match(claims(wiki.seen.taken.at(-1)!), { sub: 'bob@wiki', aud: WIKI, client_id: registered });
  },
);
