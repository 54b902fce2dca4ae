// A legacy session belongs to the principal that opened it: with principal.mode bearer, alice's
// Mcp-Session-Id used by bob, or by a client with no token, is an unknown session (404) and the
// upstream sees nothing. Real SDK 1.x legacy client and fixture; any replica with the same secret
// verifies the binding, with no store in between.

import t from 'tap';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { post, send } from '../e2e/wire.js';

const SECRET = 'session-owner-secret';
const upstream = await startLegacyServer();
const settings = { 'upstream.url': upstream.url, 'principal.mode': 'bearer', 'principal.hashSecret': SECRET };
const replicaA = await startCauseway(settings);
const replicaB = await startCauseway(settings);
t.teardown(async () => {
  await replicaA.close();
  await replicaB.close();
  await upstream.close();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const alice = new LegacyClient({ name: 'alice', version: '1.0.0' });
const aliceTransport = new LegacyTransport(new URL(replicaA.url), { requestInit: { headers: bearer('alice') } });
await alice.connect(aliceTransport);
t.teardown(() => alice.close());
const aliceSession = aliceTransport.sessionId!;

const legacyHeaders = (extra: Record<string, string>) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
  'mcp-session-id': aliceSession,
  ...extra,
});
const echo = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: 'mine' } },
});

t.test('the owner uses her session; the id handed out is bound, the upstream id is not shown', async (t) => {
  const r = await alice.callTool({ name: 'echo', arguments: { text: 'hello' } });
  t.match(JSON.stringify(r.content), /hello/);
  t.match(aliceSession, /\.[A-Za-z0-9_-]{22}$/, 'the session id carries its binding');
  t.equal(
    upstream.stats().lastHeaders['mcp-session-id'],
    aliceSession.slice(0, aliceSession.lastIndexOf('.')),
    'the upstream gets its own id back',
  );
});

t.test('bob, a tokenless client and a forged tag get 404 and the upstream sees nothing', async (t) => {
  upstream.resetStats();
  const forged = aliceSession.slice(0, -2) + (aliceSession.endsWith('AA') ? 'BB' : 'AA');
  const attempts: Array<[string, Record<string, string>]> = [
    ['bob', bearer('bob')],
    ['no token', {}],
    ['a forged tag', { ...bearer('alice'), 'mcp-session-id': forged }],
    [
      'the bare upstream id',
      { ...bearer('alice'), 'mcp-session-id': aliceSession.slice(0, aliceSession.lastIndexOf('.')) },
    ],
  ];
  for (const [who, extra] of attempts) {
    const res = await post(replicaA.url, echo(7), legacyHeaders(extra));
    t.equal(res.status, 404, `${who}: POST is an unknown session`);
    t.equal(res.json?.error?.code, -32600, `${who}: a JSON-RPC error`);
    const get = await send(replicaA.url, {
      method: 'GET',
      headers: { ...legacyHeaders(extra), accept: 'text/event-stream' },
    });
    t.equal(get.status, 404, `${who}: GET is an unknown session`);
    const del = await send(replicaA.url, { method: 'DELETE', headers: legacyHeaders(extra) });
    t.equal(del.status, 404, `${who}: DELETE is an unknown session`);
  }
  const stats = upstream.stats();
  t.same(stats.requestsByMethod, {}, 'no request reached the upstream');
  t.equal(stats.sessionsDeleted, 0, 'no session was deleted');
  t.equal(stats.toolCalls.echo ?? 0, 0, 'no tool ran');
});

t.test("another replica with the same secret serves alice's session, and still refuses bob", async (t) => {
  const mine = await post(replicaB.url, echo(8), legacyHeaders(bearer('alice')));
  t.equal(mine.status, 200, 'alice on replica B');
  t.match(mine.text, /mine/);
  const bobs = await post(replicaB.url, echo(9), legacyHeaders(bearer('bob')));
  t.equal(bobs.status, 404, 'bob on replica B');
});

t.test('a replica with another secret does not accept the id', async (t) => {
  const other = await startCauseway({ ...settings, 'principal.hashSecret': 'another-secret-of-16+' });
  t.teardown(() => other.close());
  const res = await post(other.url, echo(10), legacyHeaders(bearer('alice')));
  t.equal(res.status, 404);
});

t.test('with principal.mode none the upstream session id passes unchanged', async (t) => {
  const open = await startCauseway({ 'upstream.url': upstream.url });
  t.teardown(() => open.close());
  const client = new LegacyClient({ name: 'anyone', version: '1.0.0' });
  const transport = new LegacyTransport(new URL(open.url));
  await client.connect(transport);
  t.teardown(() => client.close());
  await client.callTool({ name: 'echo', arguments: { text: 'x' } });
  t.equal(upstream.stats().lastHeaders['mcp-session-id'], transport.sessionId, 'the id is the upstream one');
});
