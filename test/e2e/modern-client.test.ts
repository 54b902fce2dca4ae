// The real 2026-07-28 client (@modelcontextprotocol/client 2.4.0, pinned to 2026-07-28) through
// Causeway to the legacy fixture, and the legacy SDK 1.x client through the same URL.

import t from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'cache.ttlMs': 5000 });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

async function modernClient(): Promise<Client> {
  const client = new Client(
    { name: 'e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url)));
  t.teardown(() => client.close());
  return client;
}

t.test('modern_client-to-legacy_upstream-discover', async (t) => {
  const client = await modernClient();
  t.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  const d = await client.discover();
  t.same(d.supportedVersions, ['2026-07-28']);
  t.ok(d.capabilities.tools, 'tools advertised');
  t.notOk((d.capabilities as Record<string, unknown>).tasks, 'no legacy tasks capability');
  t.equal(d.ttlMs, 5000);
  t.equal(d.cacheScope, 'private');
  t.ok(client.getServerVersion()?.name, 'serverInfo from the upstream initialize');
});

t.test('modern_client-to-legacy_upstream-tools', async (t) => {
  const client = await modernClient();
  const list = await client.listTools();
  const names = list.tools.map((x) => x.name);
  t.same(names, [...names].sort(), 'deterministic order');
  t.ok(names.includes('test_simple_text'));
  const r = await client.callTool({ name: 'echo', arguments: { text: 'héllo' } });
  t.same(r.content, [{ type: 'text', text: 'héllo' }]);
  const err = await client.callTool({ name: 'test_error_handling', arguments: {} });
  t.equal(err.isError, true);
});

t.test('modern_client-to-legacy_upstream-progress', async (t) => {
  const client = await modernClient();
  const seen: number[] = [];
  const r = await client.callTool(
    { name: 'test_tool_with_progress', arguments: {} },
    { onprogress: (p) => seen.push(p.progress) },
  );
  t.ok(r.content.length > 0);
  t.same(seen, [0, 50, 100]);
});

t.test('modern_client-to-legacy_upstream-prompts-resources-completion', async (t) => {
  const client = await modernClient();
  const prompts = await client.listPrompts();
  t.ok(prompts.prompts.some((p) => p.name === 'test_simple_prompt'));
  const p = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
  t.ok(p.messages.length > 0);
  const res = await client.listResources();
  t.ok(res.resources.some((r) => r.uri === 'test://static-text'));
  const read = await client.readResource({ uri: 'test://static-text' });
  t.equal(read.contents[0]?.uri, 'test://static-text');
  const templates = await client.listResourceTemplates();
  t.ok(templates.resourceTemplates.some((x) => x.uriTemplate === 'test://template/{id}/data'));
  const c = await client.complete({
    ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
    argument: { name: 'arg1', value: '' },
  });
  t.ok(Array.isArray(c.completion.values));
  await t.rejects(client.readResource({ uri: 'test://nope' }), { code: -32602 }, 'resource not found is -32602');
});

t.test('legacy_client-to-legacy_upstream-passthrough', async (t) => {
  const before = upstream.stats().initializeCount;
  const client = new LegacyClient({ name: 'legacy', version: '1.0.0' });
  const transport = new LegacyTransport(new URL(causeway.url));
  await client.connect(transport);
  t.ok(transport.sessionId, 'the upstream session id reaches the legacy client');
  const r = await client.callTool({ name: 'counter', arguments: {} });
  const r2 = await client.callTool({ name: 'counter', arguments: {} });
  t.same([r.content, r2.content], [[{ type: 'text', text: '1' }], [{ type: 'text', text: '2' }]]);
  t.equal(upstream.stats().initializeCount, before + 1);
  await transport.terminateSession();
  await client.close();
});
