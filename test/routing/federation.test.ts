// Federation: one mount in front of two different legacy servers. Merged discover and lists with
// prefixed names and Causeway's own cursors (walked by the real 2026 client), calls routed by
// Mcp-Name to the owner, name conflicts reported at start-up, and route rules that pin methods
// and name patterns.

import t from 'tap';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { connectModern } from '../helpers/clients.js';
import { freePort } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { legacyInitialize, modernBody, modernHeaders, post, toolCall } from '../e2e/wire.js';

const PAGE = 7;
const a = await startLegacyServer({ label: 'a' });
const b = await startLegacyServer({ label: 'b' });
const causeway = await startCauseway({
  upstreams: JSON.stringify({ a: { url: a.url }, b: { url: b.url } }),
  mounts: JSON.stringify({
    '/all': { upstreams: ['a', 'b'], pageSize: PAGE, routes: [{ method: 'completion/complete', upstream: 'b' }] },
    '/flat': {
      upstreams: ['a', 'b'],
      prefix: '',
      routes: [
        { method: 'tools/call', name: 'test_simple_*', upstream: 'b' },
        { method: 'resources/read', name: 'test://static-binary', upstream: 'b' },
      ],
    },
  }),
});
t.teardown(async () => {
  await causeway.close();
  await a.close();
  await b.close();
});
const origin = causeway.app.origin!;
const url = (path: string) => new URL(path, origin).href;

const modernClient = (path: string) => connectModern(t, new URL(path, origin), 'federation');

/** The tool names fixture `a` lists, straight from it (no Causeway). */
async function directToolNames(): Promise<string[]> {
  const client = new LegacyClient({ name: 'direct', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(a.url)));
  try {
    return (await client.listTools()).tools.map((x) => x.name);
  } finally {
    await client.close();
  }
}

t.test('merged discover: both servers', async (t) => {
  const r = await post(url('/all'), modernBody('server/discover'), modernHeaders('server/discover'));
  t.equal(r.status, 200);
  const d = r.json.result;
  t.ok(d.capabilities.tools && d.capabilities.prompts && d.capabilities.resources, 'the union of capabilities');
  t.equal(d.capabilities.resources.subscribe, true);
  t.match(d.instructions, /\[a\].*\(a\)/s);
  t.match(d.instructions, /\[b\].*\(b\)/s);
  t.equal(d._meta['io.modelcontextprotocol/serverInfo'].name, 'causeway');
});

t.test('merged tools/list: prefixed, sorted, paged with Causeway cursors', async (t) => {
  const names: string[] = [];
  const cursors: string[] = [];
  const listed = { a: a.stats().requestsByMethod['tools/list'] ?? 0, b: b.stats().requestsByMethod['tools/list'] ?? 0 };
  let cursor: string | undefined;
  do {
    const r = await post(
      url('/all'),
      modernBody('tools/list', cursor === undefined ? {} : { cursor }),
      modernHeaders('tools/list'),
    );
    t.equal(r.status, 200);
    const page = r.json.result;
    t.ok(page.tools.length <= PAGE, 'pages hold at most pageSize items');
    names.push(...page.tools.map((x: { name: string }) => x.name));
    cursor = page.nextCursor;
    if (cursor !== undefined) cursors.push(cursor);
  } while (cursor !== undefined && cursors.length < 100);
  const walked = {
    a: (a.stats().requestsByMethod['tools/list'] ?? 0) - listed.a,
    b: (b.stats().requestsByMethod['tools/list'] ?? 0) - listed.b,
  };
  const own = await directToolNames();
  const expected = [
    ...own.map((n) => `a__${n}`),
    ...own.filter((n) => n !== 'about_a').map((n) => `b__${n}`),
    'b__about_b',
  ].sort();
  t.same(names, expected, 'every tool of both servers once, under its prefix, in order');
  t.equal(cursors.length, Math.ceil(expected.length / PAGE) - 1, 'pageSize items a page');
  t.same(walked, { a: 1, b: 1 }, 'one walk lists each member once: the pages come from one snapshot');
  t.ok(
    cursors.every((c) => /^[A-Za-z0-9_-]+$/.test(c)),
    'cursors are opaque tokens',
  );

  const client = await modernClient('/all');
  t.same(
    (await client.listTools()).tools.map((x) => x.name),
    expected,
    'the real client follows those cursors to the same list',
  );

  const bad = await post(
    url('/all'),
    modernBody('tools/list', { cursor: 'not-a-cursor' }),
    modernHeaders('tools/list'),
  );
  t.equal(bad.json.error.code, -32602, 'an invalid cursor is -32602');
  const foreign = await post(
    url('/all'),
    modernBody('prompts/list', { cursor: cursors[0]! }),
    modernHeaders('prompts/list'),
  );
  t.equal(foreign.json.error.code, -32602, 'a tools/list cursor is no prompts/list cursor');
  const before = a.stats().requestsByMethod['tools/list'] ?? 0;
  const elsewhere = await post(
    url('/all'),
    modernBody('tools/list', { cursor: cursors[0]! }, 2, {
      'io.modelcontextprotocol/clientCapabilities': { sampling: {} },
    }),
    modernHeaders('tools/list'),
  );
  t.equal(elsewhere.status, 200, 'a cursor from another principal or capability set still pages');
  t.same(
    elsewhere.json.result.tools.map((x: { name: string }) => x.name),
    expected.slice(PAGE, 2 * PAGE),
    'from a fresh merge, not from the other one’s snapshot',
  );
  t.equal((a.stats().requestsByMethod['tools/list'] ?? 0) - before, 1, 'which listed the members again');
});

t.test('serverInfo names who made the result: the mount for merged answers, the member for routed ones', async (t) => {
  const info = (r: { json: { result: { _meta: Record<string, { name: string }> } } }) =>
    r.json.result._meta['io.modelcontextprotocol/serverInfo']!.name;
  const discover = await post(url('/all'), modernBody('server/discover'), modernHeaders('server/discover'));
  t.equal(info(discover), 'causeway', 'discover: the mount');
  const list = await post(url('/all'), modernBody('tools/list'), modernHeaders('tools/list'));
  t.equal(info(list), 'causeway', 'a merged list: the mount');
  const toA = toolCall('a__echo', { text: 'x' });
  t.equal(info(await post(url('/all'), toA.body, toA.headers)), 'causeway-legacy-fixture-a', 'a call routed to a: a');
  const toB = toolCall('b__echo', { text: 'x' });
  t.equal(info(await post(url('/all'), toB.body, toB.headers)), 'causeway-legacy-fixture-b', 'a call routed to b: b');
});

t.test('calls reach the owner by Mcp-Name, with the prefix taken off', async (t) => {
  const client = await modernClient('/all');
  const before = { a: a.stats().toolCalls['echo'] ?? 0, b: b.stats().toolCalls['echo'] ?? 0 };
  t.same((await client.callTool({ name: 'b__about_b', arguments: {} })).content, [
    { type: 'text', text: 'served by b' },
  ]);
  t.same((await client.callTool({ name: 'a__echo', arguments: { text: 'to a' } })).content, [
    { type: 'text', text: 'to a' },
  ]);
  t.same((await client.callTool({ name: 'b__echo', arguments: { text: 'to b' } })).content, [
    { type: 'text', text: 'to b' },
  ]);
  t.same((await client.callTool({ name: 'b__echo', arguments: { text: 'to b' } })).content, [
    { type: 'text', text: 'to b' },
  ]);
  t.equal((a.stats().toolCalls['echo'] ?? 0) - before.a, 1, 'a ran a__echo once');
  t.equal((b.stats().toolCalls['echo'] ?? 0) - before.b, 2, 'b ran b__echo twice');
  t.equal(b.stats().lastHeaders['mcp-name'], 'echo', 'upstream Mcp-Name is the name the upstream knows');
  t.equal(b.stats().lastHeaders['mcp-method'], 'tools/call');

  const prompt = await client.getPrompt({ name: 'b__test_simple_prompt' });
  t.ok(prompt.messages.length > 0, 'prompts/get routed to its owner');
  t.equal(b.stats().requestsByMethod['prompts/get'], 1);

  const completion = await client.complete({
    ref: { type: 'ref/prompt', name: 'b__test_prompt_with_arguments' },
    argument: { name: 'arg1', value: '' },
  });
  t.ok(
    Array.isArray(completion.completion.values),
    'completion/complete, pinned to b by a rule, reaches b with the prompt ref under b’s own name',
  );
  t.equal(b.stats().requestsByMethod['completion/complete'], 1);

  const unknown = await post(
    url('/all'),
    toolCall('c__echo', { text: 'x' }).body,
    toolCall('c__echo', { text: 'x' }).headers,
  );
  t.equal(unknown.status, 200);
  t.equal(unknown.json.error.code, -32602, 'a name no member owns is an unknown tool');
  t.match(unknown.json.error.message, /Unknown tool: c__echo/);
});

t.test('resources and templates merge by URI; reads go to the member that listed them', async (t) => {
  const client = await modernClient('/all');
  const resources = (await client.listResources()).resources.map((r) => r.uri);
  t.same(resources, [...new Set(resources)].sort(), 'one entry per URI, sorted');
  const before = {
    a: a.stats().requestsByMethod['resources/read'] ?? 0,
    b: b.stats().requestsByMethod['resources/read'] ?? 0,
  };
  const read = await client.readResource({ uri: 'test://static-text' });
  t.ok(read.contents.length > 0);
  const templated = await client.readResource({ uri: 'test://template/42/data' });
  t.match(JSON.stringify(templated.contents), /Data for ID: 42/);
  t.equal(
    (a.stats().requestsByMethod['resources/read'] ?? 0) - before.a,
    2,
    'a URI both list goes to the first member (a)',
  );
  const unknown = await post(
    url('/all'),
    modernBody('resources/read', { uri: 'test://nobody-has-this' }),
    modernHeaders('resources/read', 'test://nobody-has-this'),
  );
  t.equal(unknown.status, 200);
  t.same(
    unknown.json.error,
    { code: -32602, message: 'Resource not found', data: { uri: 'test://nobody-has-this' } },
    'a URI no member owns is resource-not-found [RES]',
  );
  t.equal((b.stats().requestsByMethod['resources/read'] ?? 0) - before.b, 0);
});

t.test('a name conflict is reported at start-up and resolved by mount order', async (t) => {
  const conflicts = causeway.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'federation name conflict');
  const echo = conflicts.find((c) => c.mount === '/flat' && c.kind === 'tools' && c.name === 'echo');
  t.ok(echo, 'echo is exposed by both members of /flat');
  t.same(echo.upstreams, ['a', 'b'], 'a keeps it (first in the mount)');
  t.notOk(
    conflicts.some((c) => c.mount === '/all' && (c.kind === 'tools' || c.kind === 'prompts')),
    'prefixed names do not conflict',
  );
  const pinned = conflicts.find((c) => c.mount === '/flat' && c.name === 'test_simple_text');
  t.same(pinned.upstreams, ['b', 'a'], 'a route rule decides who keeps a name');

  const own = await directToolNames();
  const flatTools = conflicts.filter((c) => c.mount === '/flat' && c.kind === 'tools').length;
  t.equal(flatTools, own.length - 1, 'every shared tool name, and not about_a / about_b');
  const metrics = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  const n = conflicts.filter((c) => c.mount === '/flat').length;
  t.match(metrics, new RegExp(`causeway_federation_conflicts\\{mount="/flat"\\} ${n}\\b`), 'and counted per mount');
});

t.test('route rules pin methods and name patterns to one member', async (t) => {
  const client = await modernClient('/flat');
  const before = { a: { ...a.stats().toolCalls }, b: { ...b.stats().toolCalls } };
  await client.callTool({ name: 'test_simple_text', arguments: {} });
  await client.callTool({ name: 'echo', arguments: { text: 'flat' } });
  await client.callTool({ name: 'about_b', arguments: {} });
  t.equal(
    (b.stats().toolCalls['test_simple_text'] ?? 0) - (before.b['test_simple_text'] ?? 0),
    1,
    'test_simple_* is pinned to b',
  );
  t.equal((a.stats().toolCalls['echo'] ?? 0) - (before.a['echo'] ?? 0), 1, 'echo, shared, goes to the first member');
  t.equal((b.stats().toolCalls['about_b'] ?? 0) - (before.b['about_b'] ?? 0), 1, 'a name only b lists goes to b');

  const reads = b.stats().requestsByMethod['resources/read'] ?? 0;
  await client.readResource({ uri: 'test://static-binary' });
  t.equal((b.stats().requestsByMethod['resources/read'] ?? 0) - reads, 1, 'a resources/read rule with a URI pattern');
});

t.test('a legacy client opens a session of the translated face over the merged view', async (t) => {
  const init = legacyInitialize('2025-11-25');
  const legacy = await post(url('/all'), init.body, init.headers);
  t.equal(legacy.status, 200);
  t.match(legacy.headers['mcp-session-id'], /^[A-Za-z0-9_-]{22}$/, 'a session of Causeway’s own');
  t.equal(legacy.json.result.protocolVersion, '2025-11-25');
  t.equal(legacy.json.result.serverInfo.name, 'causeway', 'the merged server, as discover names it');
  t.ok(legacy.json.result.capabilities.tools && legacy.json.result.capabilities.resources);
});

// Last: it toggles b's dynamic tool.
t.test('one listen stream follows every member; a resource subscription goes to its owner', async (t) => {
  const client = await modernClient('/all');
  const seen = { tools: 0, updated: [] as string[] };
  client.setNotificationHandler('notifications/tools/list_changed', () => void (seen.tools += 1));
  client.setNotificationHandler('notifications/resources/updated', (n) => void seen.updated.push(n.params.uri));
  const discover = await post(url('/all'), modernBody('server/discover'), modernHeaders('server/discover'));
  t.equal(discover.json.result.capabilities.tools.listChanged, true, 'discover promises what listen delivers');

  const subscribes = {
    a: a.stats().requestsByMethod['resources/subscribe'] ?? 0,
    b: b.stats().requestsByMethod['resources/subscribe'] ?? 0,
  };
  const sub = await client.listen({
    toolsListChanged: true,
    resourceSubscriptions: ['test://watched-resource', 'test://nobody-has-this'],
  });
  t.same(
    sub.honoredFilter,
    { toolsListChanged: true, resourceSubscriptions: ['test://watched-resource'] },
    'the union of what the members back; an unowned URI is not held',
  );
  t.equal(
    (a.stats().requestsByMethod['resources/subscribe'] ?? 0) - subscribes.a,
    1,
    'the URI is subscribed on its owner (a, first in the mount)',
  );
  t.equal((b.stats().requestsByMethod['resources/subscribe'] ?? 0) - subscribes.b, 0, 'and not on the other member');

  await client.callTool({ name: 'b__test_trigger_tool_change', arguments: {} });
  await until(() => seen.tools >= 1, { what: 'tools/list_changed on the federated stream' });
  t.pass('a list change on b reaches the federated stream');
  await client.callTool({ name: 'a__test_trigger_resource_update', arguments: {} });
  await until(() => seen.updated.length >= 1, { what: 'resources/updated on the federated stream' });
  t.same(seen.updated, ['test://watched-resource'], 'a resource update on a reaches it too');
  await sub.close();
});

t.test('a member down at start-up: start-up goes on, merged answers fail rather than come back short', async (t) => {
  const deadPort = await freePort();
  const partial = await startCauseway({
    upstreams: JSON.stringify({
      live: { url: a.url },
      dead: { url: `http://127.0.0.1:${deadPort}/mcp`, connectTimeoutMs: 500 },
    }),
    mounts: JSON.stringify({ '/partial': { upstreams: ['live', 'dead'] } }),
  });
  t.teardown(() => partial.close());
  const warnings = partial.logs
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg?.startsWith('federation check could not list an upstream'));
  t.same(
    warnings.map((w) => w.upstream),
    ['dead'],
    'the unreachable member is reported once',
  );
  const r = await post(
    new URL('/partial', partial.app.origin).href,
    modernBody('tools/list'),
    modernHeaders('tools/list'),
  );
  t.equal(r.status, 502, 'a merged list without one member would be a wrong answer');
  t.equal(r.json.error.code, -32603);
  const call = await post(
    new URL('/partial', partial.app.origin).href,
    toolCall('live__echo', { text: 'ok' }).body,
    toolCall('live__echo', { text: 'ok' }).headers,
  );
  t.same(call.json.result.content, [{ type: 'text', text: 'ok' }], 'calls to the live member still go through');
});
