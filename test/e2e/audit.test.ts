// log.audit: every tools/call, prompts/get and resources/read, of a 2026 client (raw POSTs) and of
// the legacy SDK 1.32.2 client alike, ends in one "audit" line saying who called (the JWT's iss,
// sub and client_id), where (mount, upstream, eras), what, how it ended (a refusal by the scopes
// or the missing token, an unknown tool) and when, with its request and trace ids; with
// log.accessSample 0 still, never with log.audit off, and never with the token in it.

import t, { type Test } from 'tap';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { jwtFace, protectedResource, startAuthorizationServer } from '../helpers/authorization-server.js';
import { startCauseway, type Settings } from '../helpers/causeway.js';
import { until } from '../helpers/until.js';
import { modernBody, modernHeaders, type JsonObject } from './wire.js';

const { port, resource } = await protectedResource();
const opaque = await protectedResource();
const upstream = await startLegacyServer();
t.teardown(() => upstream.close());
const as = await startAuthorizationServer(t, {
  resources: { [resource]: 'jwt', [opaque.resource]: 'opaque' },
  scopes: ['mcp', 'mcp:admin'],
  clients: ['alice', 'causeway'],
});
const causeway = await startCauseway({
  ...jwtFace(as, port, resource),
  'upstream.url': upstream.url,
  'log.audit': 'true',
  'log.accessSample': 0,
  'auth.rules': JSON.stringify({ '*': ['mcp'], 'tools/call test_*': ['mcp:admin'] }),
});
t.teardown(() => causeway.close());
const token = await as.token({ client: 'alice', resource, scope: 'mcp' });

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const traceparent = `00-${TRACE}-b7ad6b7169203331-01`;

type Line = Record<string, unknown>;
const lines = (logs: readonly string[], msg: string): Line[] =>
  logs.map((l) => JSON.parse(l) as Line).filter((l) => l.msg === msg);
const auditOf = (reqId: string): Line | undefined => lines(causeway.logs, 'audit').find((l) => l.reqId === reqId);

/** A 2026 client's request, raw; its audit line once the response has closed. */
async function modern(reqId: string, method: string, params: JsonObject, name: string, bearer = token): Promise<Line> {
  const headers = { ...modernHeaders(method, name), 'x-request-id': reqId, traceparent };
  if (bearer !== '') Object.assign(headers, { authorization: `Bearer ${bearer}` });
  const res = await fetch(causeway.url, { method: 'POST', headers, body: JSON.stringify(modernBody(method, params)) });
  await res.text();
  await until(() => auditOf(reqId) !== undefined, { what: `the audit line of ${reqId}` });
  return auditOf(reqId)!;
}

const alice = { iss: as.issuer, sub: 'alice', client_id: 'alice' };
const where = { mount: '/mcp', upstream: 'default', upstreamEra: 'legacy' };

t.test('a 2026 client: each call, prompt and read has its line, refusals and errors included', async (t) => {
  const ok = await modern('m-call', 'tools/call', { name: 'echo', arguments: { text: 'secret-argument' } }, 'echo');
  t.match(ok, { ...alice, ...where, era: 'modern', method: 'tools/call', name: 'echo', outcome: 'ok', status: 200 });
  t.match(ok, { reqId: 'm-call', traceId: /^[\da-f]{32}$/, ms: Number });
  t.match(await modern('m-prompt', 'prompts/get', { name: 'test_simple_prompt' }, 'test_simple_prompt'), {
    ...alice,
    method: 'prompts/get',
    name: 'test_simple_prompt',
    outcome: 'ok',
  });
  t.match(await modern('m-read', 'resources/read', { uri: 'test://static-text' }, 'test://static-text'), {
    ...alice,
    method: 'resources/read',
    name: 'test://static-text',
    outcome: 'ok',
  });
  const unknown = await modern('m-unknown', 'tools/call', { name: 'no_such_tool', arguments: {} }, 'no_such_tool');
  t.match(unknown, { ...alice, name: 'no_such_tool', outcome: 'error', code: Number });
  const scoped = await modern('m-scope', 'tools/call', { name: 'test_simple_text', arguments: {} }, 'test_simple_text');
  t.match(scoped, {
    ...alice,
    name: 'test_simple_text',
    outcome: 'refused',
    reason: 'insufficient_scope',
    status: 403,
  });
  const tokenless = await modern('m-401', 'tools/call', { name: 'echo', arguments: {} }, 'echo', '');
  t.match(tokenless, {
    era: 'modern',
    method: 'tools/call',
    name: 'echo',
    outcome: 'refused',
    status: 401,
    traceId: TRACE,
  });
  t.notOk('sub' in tokenless, 'no token, no subject');
});

t.test('a legacy client (SDK 1.32.2): the same lines, era legacy', async (t) => {
  const headers = { authorization: `Bearer ${token}`, traceparent, 'x-request-id': 'legacy' };
  const client = new LegacyClient({ name: 'legacy-audit', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(causeway.url), { requestInit: { headers } }));
  t.teardown(() => client.close());
  const before = lines(causeway.logs, 'audit').length;
  t.same((await client.callTool({ name: 'echo', arguments: { text: 'old' } })).content, [
    { type: 'text', text: 'old' },
  ]);
  await client.getPrompt({ name: 'test_simple_prompt' });
  await client.readResource({ uri: 'test://static-text' });
  await t.rejects(client.callTool({ name: 'test_simple_text', arguments: {} }), { code: 403 });
  await t.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }));
  await until(() => lines(causeway.logs, 'audit').length >= before + 5, { what: 'five legacy audit lines' });
  const legacy = lines(causeway.logs, 'audit').slice(before);
  const common = { ...alice, ...where, era: 'legacy', reqId: 'legacy', traceId: TRACE };
  t.match(legacy, [
    { ...common, method: 'tools/call', name: 'echo', outcome: 'ok', status: 200 },
    { ...common, method: 'prompts/get', name: 'test_simple_prompt', outcome: 'ok' },
    { ...common, method: 'resources/read', name: 'test://static-text', outcome: 'ok' },
    { ...common, method: 'tools/call', name: 'test_simple_text', outcome: 'refused', reason: 'insufficient_scope' },
    { ...common, method: 'tools/call', name: 'no_such_tool', outcome: 'error', code: Number },
  ]);
});

t.test('no token, session id or argument is ever written; log.accessSample 0 writes no access line', async (t) => {
  const all = causeway.logs.join('\n');
  t.notOk(all.includes(token), 'the token appears in no line');
  t.notOk(all.includes('secret-argument'), 'nor a tool argument');
  const keyed = lines(causeway.logs, 'audit').filter((l) => 'sessionId' in l || 'mcp-session-id' in l);
  t.same(keyed, [], 'no audit line names a session');
  t.same(lines(causeway.logs, 'request'), [], 'the access log keeps to its sample');
});

const SECRET = 'a-test-secret-of-32-characters!!';

/** A Causeway on the fixture with log.audit on and `settings`, closed when `t` ends. */
async function auditing(t: Test, settings: Settings) {
  const cw = await startCauseway({ 'upstream.url': upstream.url, 'log.audit': 'true', ...settings });
  t.teardown(() => cw.close());
  return cw;
}

/** A tools/call to `url` with `headers`; the lines of `logs` saying `msg` once one is there. */
async function echoOn(url: string, logs: string[], headers: Record<string, string>, msg = 'audit'): Promise<Line[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...modernHeaders('tools/call', 'echo'), ...headers },
    body: JSON.stringify(modernBody('tools/call', { name: 'echo', arguments: { text: 'x' } })),
  });
  await res.text();
  await until(() => lines(logs, msg).length > 0, { what: `a ${msg} line` });
  return lines(logs, msg);
}

t.test("introspection: the answer's client_id is kept as the JWT claim is", async (t) => {
  const cw = await auditing(t, {
    'listen.port': opaque.port,
    'principal.hashSecret': SECRET,
    'auth.mode': 'introspection',
    'auth.issuer': as.issuer,
    'auth.resource': opaque.resource,
    'auth.introspectionUrl': as.introspectionUrl,
    'auth.introspectionClientId': 'causeway',
    'auth.introspectionClientSecret': as.secret('causeway'),
  });
  const reference = await as.token({ client: 'alice', resource: opaque.resource, scope: 'mcp' });
  const [line] = await echoOn(cw.url, cw.logs, { authorization: `Bearer ${reference}` });
  t.match(line, { ...alice, era: 'modern', name: 'echo', outcome: 'ok' });
  t.notOk(cw.logs.join('\n').includes(reference), 'the token appears in no line');
});

t.test('principal.mode header: the label the header carries', async (t) => {
  const cw = await auditing(t, { 'principal.mode': 'header', 'principal.hashSecret': SECRET });
  const [line] = await echoOn(cw.url, cw.logs, { 'x-causeway-principal': 'team-blue' });
  t.match(line, { principal: 'team-blue', era: 'modern', name: 'echo', outcome: 'ok' });
  t.notOk('sub' in line!, 'no token, no subject');
});

t.test("a call over its method's rate: refused, and audited so", async (t) => {
  const rateMethods = JSON.stringify({ 'tools/call': { ratePerSecond: 0.001, burst: 1 } });
  const cw = await auditing(t, {
    'principal.mode': 'header',
    'principal.hashSecret': SECRET,
    'limits.rateMethods': rateMethods,
  });
  await echoOn(cw.url, cw.logs, { 'x-causeway-principal': 'team-red' });
  const res = await fetch(cw.url, {
    method: 'POST',
    headers: { ...modernHeaders('tools/call', 'echo'), 'x-causeway-principal': 'team-red', 'x-request-id': 'over' },
    body: JSON.stringify(modernBody('tools/call', { name: 'echo', arguments: { text: 'x' } })),
  });
  await res.text();
  t.equal(res.status, 429);
  await until(() => lines(cw.logs, 'audit').length > 1, { what: "the refused call's line" });
  t.match(lines(cw.logs, 'audit')[1], {
    principal: 'team-red',
    reqId: 'over',
    outcome: 'refused',
    reason: 'rate_limited',
  });
});

t.test("a 2026 upstream: its relayed answers, and a legacy client's over it, read for their errors", async (t) => {
  const modernUpstream = await startModernServer();
  t.teardown(() => modernUpstream.close());
  const cw = await auditing(t, { 'upstream.url': modernUpstream.url });
  // This server has no echo tool: its own JSON-RPC error, relayed as it came.
  const [relayed] = await echoOn(cw.url, cw.logs, {});
  t.match(relayed, { era: 'modern', upstreamEra: 'modern', name: 'echo', outcome: 'error', code: -32602 });
  const client = new LegacyClient({ name: 'legacy-audit', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(cw.url)));
  t.teardown(() => client.close());
  await client.callTool({ name: 'test_simple_text', arguments: {} });
  await t.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }));
  await until(() => lines(cw.logs, 'audit').length > 2, { what: "the legacy calls' lines" });
  t.match(lines(cw.logs, 'audit').slice(1), [
    { era: 'legacy', upstreamEra: 'modern', name: 'test_simple_text', outcome: 'ok' },
    { era: 'legacy', upstreamEra: 'modern', name: 'no_such_tool', outcome: 'error', code: Number },
  ]);
});

t.test('with log.audit off, no audit line', async (t) => {
  const quiet = await auditing(t, { 'log.audit': 'false', 'log.accessSample': 1 });
  await echoOn(quiet.url, quiet.logs, {}, 'request');
  t.same(lines(quiet.logs, 'audit'), []);
});
