// Several issuers (auth.moreIssuers): tokens of each trusted authorization server are checked
// against that server's own keys and reach the upstream; one subject at two issuers is two
// principals, with sessions of their own; a token of any other issuer is a 401 before anything
// goes upstream, counted as wrong_issuer; the metadata names every trusted server.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { jwtFace, protectedResource, startAuthorizationServer } from '../helpers/authorization-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { rpc } from '../mrtr/wire.js';

const { port, resource, metadataUrl } = await protectedResource();
const upstream = await startLegacyServer();
t.teardown(() => upstream.close());
const options = { resources: { [resource]: 'jwt' as const }, scopes: ['mcp'], clients: ['alice'] };
const workforce = await startAuthorizationServer(t, options);
const partners = await startAuthorizationServer(t, options);
const stranger = await startAuthorizationServer(t, options);
const causeway = await startCauseway({
  ...jwtFace(workforce, port, resource),
  'upstream.url': upstream.url,
  'auth.moreIssuers': `${partners.issuer}=${partners.jwksUrl}`,
});
t.teardown(() => causeway.close());

const echo = (token: string) =>
  rpc(
    causeway.url,
    'tools/call',
    { name: 'echo', arguments: { text: 'x' } },
    { headers: { authorization: `Bearer ${token}` } },
  );

async function wrongIssuers(): Promise<number> {
  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  return Number(/^causeway_auth_failures_total\{reason="wrong_issuer"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

t.test('each trusted issuer’s tokens pass; the same subject at two issuers is two principals', async (t) => {
  for (const as of [workforce, partners]) {
    const r = await echo(await as.token({ client: 'alice', resource }));
    t.equal(r.status, 200, as === workforce ? 'auth.issuer' : 'an issuer of auth.moreIssuers');
    t.same(r.body.result.content, [{ type: 'text', text: 'x' }]);
  }
  t.equal(upstream.stats().initializeCount, 2, 'alice of each issuer has a session of her own');
});

t.test('a token of an issuer not trusted: 401, nothing upstream, counted as wrong_issuer', async (t) => {
  const before = await wrongIssuers();
  const requests = upstream.stats().requestsByMethod['tools/call'] ?? 0;
  const r = await echo(await stranger.token({ client: 'alice', resource }));
  t.equal(r.status, 401);
  t.equal(r.body.error.code, -32600);
  t.equal((await wrongIssuers()) - before, 1);
  t.equal(upstream.stats().requestsByMethod['tools/call'] ?? 0, requests, 'no call went upstream');
});

t.test('the metadata names both authorization servers', async (t) => {
  const doc = (await (await fetch(metadataUrl)).json()) as { authorization_servers: string[] };
  t.same(doc.authorization_servers, [workforce.issuer, partners.issuer]);
});
