// Virtual servers (mounts.<path>.tools, .prompts, .resources): what a mount's clients see of its
// upstream, the same for the real 2026 client (@modelcontextprotocol/client 2.4.0) and the legacy
// SDK client (1.32.2) over the legacy fixture (SDK 1.32.2). A hidden name is -32602 and reaches
// no upstream (the fixture counts every request it gets); a renamed tool is called under its own
// name; two mounts over one upstream are two views over one gateway cache; a federation's
// conflicts on names its view hides are none; mistakes in a view are refused at start-up.

import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import type { JsonObject } from '../../src/jsonrpc.js';
import { throughView, ViewFilter } from '../../src/view/index.js';
import { startLegacyServer, type LegacyServerHandle } from '../fixtures/legacy-server.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { connectLegacy, connectModern } from '../helpers/clients.js';
import { legacyInitialize, modernBody, modernHeaders, post, toolCall } from '../e2e/wire.js';

const a = await startLegacyServer({ label: 'a' });
const b = await startLegacyServer({ label: 'b' });
const c = await startModernServer({ label: 'c' });
const CURATED = {
  upstreams: ['a'],
  tools: {
    deny: ['test_*image*'],
    rename: { test_simple_text: 'say_hello', test_x_mcp_header: 'regional' },
    describe: { test_simple_text: 'Says hello, renamed by the mount' },
  },
};
const causeway = await startCauseway({
  upstreams: JSON.stringify({ a: { url: a.url }, b: { url: b.url }, c: { url: c.url } }),
  mounts: JSON.stringify({
    '/curated': CURATED,
    '/modern-view': { ...CURATED, upstreams: ['c'] },
    '/full': { upstreams: ['a'] },
    // Two members with the same names, no prefix: every name is a conflict, unless the view hides it.
    '/flat': { upstreams: ['a', 'b'], prefix: '' },
    '/flat-view': {
      upstreams: ['a', 'b'],
      prefix: '',
      tools: { allow: ['about_*'] },
      prompts: { deny: ['*'] },
      resources: { deny: ['*'] },
    },
  }),
  'cache.methods': JSON.stringify({ 'tools/list': { ttlMs: 60_000, scope: 'public' } }),
});
t.teardown(async () => {
  await causeway.close();
  await a.close();
  await b.close();
  await c.close();
});
const origin = causeway.app.origin!;
const url = (path: string) => new URL(path, origin).href;
/** Every request the upstream got, by method: counted by the fixture itself. */
const requests = (s: LegacyServerHandle) => Object.values(s.stats().requestsByMethod).reduce((x, y) => x + y, 0);

const modernClient = (path: string) => connectModern(t, new URL(path, origin), 'filters');
const legacyClient = (path: string) => connectLegacy(t, new URL(path, origin), 'filters-legacy');

async function listed(path: string): Promise<Array<{ name: string; description?: string }>> {
  const r = await post(url(path), modernBody('tools/list'), modernHeaders('tools/list'));
  if (r.status !== 200) throw new Error(`tools/list on ${path}: HTTP ${r.status}`);
  return r.json.result.tools;
}

t.test('two mounts over one upstream: two views, one upstream tools/list under both', async (t) => {
  const before = a.stats().requestsByMethod['tools/list'] ?? 0;
  const curated = (await listed('/curated')).map((x) => x.name);
  const full = (await listed('/full')).map((x) => x.name);
  t.same(
    curated,
    (await listed('/curated')).map((x) => x.name),
    'the view is the same each time',
  );
  t.equal((a.stats().requestsByMethod['tools/list'] ?? 0) - before, 1, 'one upstream tools/list served all three');
  t.ok(full.includes('test_image_content') && full.includes('test_simple_text'), '/full shows the upstream as is');
  t.notOk(curated.includes('test_image_content'), '/curated hides the image tool');
  t.ok(curated.includes('say_hello') && !curated.includes('test_simple_text'), '/curated shows the new name only');
  t.equal(curated.length, full.length - 1, 'one tool hidden, two renamed, the rest as they are');
});

t.test('deny: a hidden tool is listed nowhere, and a call to it is -32602 with 0 upstream requests', async (t) => {
  const modern = await modernClient('/curated');
  const legacy = await legacyClient('/curated');
  const modernNames = (await modern.listTools()).tools.map((x) => x.name);
  const legacyNames = (await legacy.listTools()).tools.map((x) => x.name);
  t.same(
    modernNames.filter((n) => /^test_.*image.*$/.test(n)),
    [],
    'the 2.4.0 client sees none of test_*image*',
  );
  t.same(
    legacyNames.filter((n) => /^test_.*image.*$/.test(n)),
    [],
    'the SDK 1.32.2 client sees none either',
  );
  t.same([...legacyNames].sort(), [...modernNames].sort(), 'both eras see the same view');

  const sent = requests(a);
  const call = toolCall('test_image_content', {});
  const r = await post(url('/curated'), call.body, call.headers);
  t.equal(r.status, 200, 'in-band, as an upstream answers an unknown tool');
  t.equal(r.json.error.code, -32602);
  t.match(r.json.error.message, /Unknown tool: test_image_content/);
  await t.rejects(legacy.callTool({ name: 'test_image_content', arguments: {} }), { code: -32602 }, 'legacy: -32602');
  await t.rejects(modern.callTool({ name: 'test_image_content', arguments: {} }), { code: -32602 }, '2026: -32602');
  t.equal(requests(a) - sent, 0, 'the upstream got no request at all');
  t.equal(a.stats().toolCalls.test_image_content, undefined, 'and never ran the tool');
});

t.test(
  'rename and describe: seen by the 2.4.0 and SDK 1.32.2 clients; the call reaches the upstream name',
  async (t) => {
    const modern = await modernClient('/curated');
    const legacy = await legacyClient('/curated');
    for (const [who, tools] of [
      ['2.4.0', (await modern.listTools()).tools],
      ['SDK 1.32.2', (await legacy.listTools()).tools],
    ] as const) {
      const hello = tools.find((x) => x.name === 'say_hello');
      t.equal(hello?.description, 'Says hello, renamed by the mount', `${who}: the new name and description`);
      t.notOk(
        tools.some((x) => x.name === 'test_simple_text'),
        `${who}: the old name is gone`,
      );
    }
    const calls = a.stats().toolCalls.test_simple_text ?? 0;
    const text = [{ type: 'text', text: 'This is a simple text response for testing.' }];
    t.same((await modern.callTool({ name: 'say_hello', arguments: {} })).content, text, '2.4.0 calls say_hello');
    t.same((await legacy.callTool({ name: 'say_hello', arguments: {} })).content, text, 'SDK 1.32.2 calls say_hello');
    t.equal((a.stats().toolCalls.test_simple_text ?? 0) - calls, 2, 'both reached the upstream as test_simple_text');
    const sent = requests(a);
    await t.rejects(legacy.callTool({ name: 'test_simple_text', arguments: {} }), { code: -32602 }, 'old name: -32602');
    const call = toolCall('test_simple_text', {});
    t.equal((await post(url('/curated'), call.body, call.headers)).json.error.code, -32602);
    t.equal(requests(a) - sent, 0, 'the old name reaches nothing');
    // The unfiltered mount over the same upstream still has it under its own name.
    const full = toolCall('test_simple_text', {});
    t.same((await post(url('/full'), full.body, full.headers)).json.result.content, text);
  },
);

t.test('Mcp-Name, Mcp-Param-* and the metrics see the renamed tool', async (t) => {
  const args = { region: 'us-west' };
  const regional = (headers: Record<string, string>) =>
    post(url('/curated'), toolCall('regional', args).body, { ...modernHeaders('tools/call', 'regional'), ...headers });
  const ok = await regional({ 'mcp-param-region': 'us-west' });
  t.same(ok.json.result?.content, [{ type: 'text', text: 'region=us-west' }], 'the header matches: called');
  const calls = a.stats().toolCalls.test_x_mcp_header ?? 0;
  const bad = await regional({ 'mcp-param-region': 'eu-central' });
  t.equal(bad.status, 400);
  t.equal(bad.json.error.code, -32020, "the renamed tool's x-mcp-header is checked");
  const missing = await regional({});
  t.equal(missing.json.error.code, -32020, 'a missing Mcp-Param-Region too');
  t.equal(a.stats().toolCalls.test_x_mcp_header ?? 0, calls, 'neither reached the upstream');
  const mismatch = await post(url('/curated'), toolCall('regional', args).body, {
    ...modernHeaders('tools/call', 'test_x_mcp_header'),
    'mcp-param-region': 'us-west',
  });
  t.equal(mismatch.json.error.code, -32020, 'Mcp-Name must be the name the client sees');

  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  const series = (name: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`causeway_modern_requests_total{upstream="a",method="tools/call",name="${name}",`));
  t.ok(series('say_hello').length > 0, 'calls on /curated are labelled say_hello');
  t.ok(series('regional').length > 0, 'and regional');
  t.ok(series('test_simple_text').length > 0, 'calls on /full keep the upstream name');
  t.same(series('test_image_content'), [], 'the hidden tool labels nothing: it is _other');
});

t.test('a 2025-03-26 batch naming a hidden tool is sent nowhere; each of its requests gets -32602', async (t) => {
  const { body, headers } = legacyInitialize('2025-03-26');
  const init = await post(url('/curated'), body, headers);
  const session = init.headers['mcp-session-id'] as string;
  t.ok(session, 'a legacy session');
  const sent = requests(a);
  const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } });
  const r = await post(url('/curated'), [call(2, 'test_image_content'), call(3, 'say_hello')], {
    ...headers,
    'mcp-session-id': session,
    'mcp-protocol-version': '2025-03-26',
  });
  t.equal(r.status, 200);
  t.same(
    (r.json as Array<{ id: number; error: { code: number } }>).map((m) => [m.id, m.error.code]),
    [
      [2, -32602],
      [3, -32602],
    ],
  );
  t.equal(requests(a) - sent, 0, 'the upstream got none of it');
});

t.test('over a 2026 upstream: relayed for the 2.4.0 client, translated for the SDK 1.32.2 client', async (t) => {
  const modern = await modernClient('/modern-view');
  const legacy = await legacyClient('/modern-view');
  const seen = {
    modern: (await modern.listTools()).tools.map((x) => x.name).sort(),
    legacy: (await legacy.listTools()).tools.map((x) => x.name).sort(),
  };
  t.same(seen.legacy, seen.modern, 'one view for both eras');
  t.ok(seen.modern.includes('say_hello'), 'renamed');
  t.notOk(
    seen.modern.includes('test_image_content') || seen.modern.includes('test_simple_text'),
    'hidden, renamed away',
  );
  const sent = Object.values(c.stats().requestsByMethod).reduce((x, y) => x + y, 0);
  await t.rejects(modern.callTool({ name: 'test_image_content', arguments: {} }), { code: -32602 });
  await t.rejects(legacy.callTool({ name: 'test_image_content', arguments: {} }), { code: -32602 });
  t.equal(Object.values(c.stats().requestsByMethod).reduce((x, y) => x + y, 0) - sent, 0, '0 upstream requests');
  const text = [{ type: 'text', text: 'This is a simple text response for testing.' }];
  t.same((await modern.callTool({ name: 'say_hello', arguments: {} })).content, text);
  t.same((await legacy.callTool({ name: 'say_hello', arguments: {} })).content, text);
  t.equal(c.stats().toolCalls.test_simple_text, 2, 'both called the upstream tool by its own name');
});

t.test("a federation's view: its lists, legacy face and conflicts", async (t) => {
  const metrics = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  const conflicts = (mount: string) =>
    Number(new RegExp(`^causeway_federation_conflicts\\{mount="${mount}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
  t.ok(conflicts('/flat') > 0, `the two members conflict on /flat (${conflicts('/flat')})`);
  t.equal(conflicts('/flat-view'), 0, 'on /flat-view every name they share is hidden');
  const names = (await listed('/flat-view')).map((x) => x.name).sort();
  t.same(names, ['about_a', 'about_b']);
  const legacy = await legacyClient('/flat-view');
  t.same((await legacy.listTools()).tools.map((x) => x.name).sort(), names, 'its legacy face shows the same');
  t.same((await legacy.listPrompts()).prompts, [], 'prompts all hidden');
  await t.rejects(legacy.getPrompt({ name: 'test_simple_prompt' }), { code: -32602 });
  const read = await post(
    url('/flat-view'),
    modernBody('resources/read', { uri: 'test://static-text' }),
    modernHeaders('resources/read', 'test://static-text'),
  );
  t.equal(read.json.error.code, -32602, 'a hidden resource is not found');
});

t.test('mistakes in a view are refused at start-up, all at once', async (t) => {
  const problems = (mounts: unknown): string[] => {
    try {
      loadConfig(['--upstreams', JSON.stringify({ a: { url: a.url } }), '--mounts', JSON.stringify(mounts)], {});
      return [];
    } catch (err) {
      return (err as { problems: string[] }).problems;
    }
  };
  t.same(problems({ '/m': CURATED }), [], 'the test mount itself is fine');
  t.same(
    problems({
      '/m': {
        upstreams: ['a'],
        tools: {
          allow: ['ok_*', 'plain'],
          deny: [''],
          rename: { x: 'same', y: 'same', hidden: 'fine', ok_z: 'plain', ok_w: 'not valid' },
          describe: { gone: 'no', 'ok_*': 'a pattern' },
          bogus: 1,
        },
        resources: { rename: {} },
        prompts: 'nope',
      },
    }),
    [
      'mounts./m.tools: unknown setting bogus',
      'mounts./m.tools.deny[0]: "" is not a name pattern',
      'mounts./m.tools.describe.ok_*: names one name, not a pattern',
      'mounts./m.tools.rename.x: renames a name the view hides',
      'mounts./m.tools.rename: x and y are both renamed same',
      'mounts./m.tools.rename.y: renames a name the view hides',
      'mounts./m.tools.rename.hidden: renames a name the view hides',
      'mounts./m.tools.rename.ok_w: "not valid" is not a valid name',
      'mounts./m.tools.rename.ok_z: plain is already a name the view shows',
      'mounts./m.tools.describe.gone: describes a name the view hides',
      'mounts./m.prompts: expected an object of allow, deny, rename, describe',
      'mounts./m.resources: unknown setting rename',
    ],
  );
});

t.test('the view on its own: completion refs, listen subscriptions, templates, composition with a grant', async (t) => {
  const view = new ViewFilter({
    prompts: { deny: ['secret_*'], rename: { p: 'q' }, describe: {} },
    resources: { allow: ['test://open/*'], deny: [], rename: {}, describe: {} },
  });
  const ref = (r: Record<string, string>) => view.inbound('completion/complete', { ref: r, argument: {} });
  t.same(ref({ type: 'ref/prompt', name: 'q' }), { ref: { type: 'ref/prompt', name: 'p' }, argument: {} });
  t.throws(() => ref({ type: 'ref/prompt', name: 'secret_x' }), { code: -32602, message: 'Unknown prompt: secret_x' });
  t.throws(() => ref({ type: 'ref/prompt', name: 'p' }), { code: -32602 }, 'a renamed-away name is unknown');
  t.throws(() => ref({ type: 'ref/resource', uri: 'test://closed/1' }), {
    code: -32602,
    data: { uri: 'test://closed/1' },
  });
  t.throws(() => view.inbound('resources/subscribe', { uri: 'test://closed/1' }), { code: -32602 });
  const listen = { notifications: { resourceSubscriptions: ['test://open/1', 'test://closed/1'] } };
  t.same(view.inbound('subscriptions/listen', listen), { notifications: { resourceSubscriptions: ['test://open/1'] } });
  t.same(
    view.inbound('tools/call', { name: 'anything' }),
    { name: 'anything' },
    'a kind the view does not name is whole',
  );
  t.notOk(view.mayHide('tools/list'));
  // What quotas ask before counting a call: a hidden or renamed-away name spends nothing.
  t.ok(view.shows('prompts/get', 'q'));
  t.notOk(view.shows('prompts/get', 'secret_x'));
  t.notOk(view.shows('prompts/get', 'p'));
  t.ok(view.shows('tools/call', 'anything'), 'a kind the view does not name');
  t.ok(view.shows('ping', undefined));
  const templates = { resourceTemplates: [{ uriTemplate: 'test://open/{id}' }, { uriTemplate: 'test://closed/{id}' }] };
  t.same(view.filterList('resources/templates/list', templates), {
    resourceTemplates: [templates.resourceTemplates[0]],
  });
  // The grant's rules speak of the names the client sees: they get the list after the view.
  const seen: unknown[] = [];
  const grant = { mayHide: () => false, filterList: (_m: string, r: JsonObject) => (seen.push(r), r) };
  const both = throughView(view, grant);
  t.ok(both.mayHide('prompts/list'));
  both.filterList('prompts/list', { prompts: [{ name: 'p' }, { name: 'secret_1' }] });
  t.same(seen, [{ prompts: [{ name: 'q' }] }]);
});
