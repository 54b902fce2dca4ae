// The gateway cache on the legacy face of a stdio upstream: a legacy client (SDK 1.32.2) whose
// session is a child of its own has its lists answered from what Causeway kept, under the
// upstream's cache.* policy, and a list_changed the session's streams carry drops what was kept.
// A private answer is the session's own: another client's session asks its own child.

import t from 'tap';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startCauseway } from '../helpers/causeway.js';
import { until } from '../helpers/until.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));

const causeway = await startCauseway({
  'upstream.transport': 'stdio',
  'upstream.command': process.execPath,
  'upstream.args': `${FIXTURE},--stdio`,
  'cache.methods': JSON.stringify({ 'tools/list': { ttlMs: 60_000, scope: 'private' } }),
});
t.teardown(() => causeway.close());

async function legacyClient(): Promise<Client> {
  const client = new Client({ name: 'channel-cache', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url)));
  t.teardown(() => client.close());
  return client;
}

/** The tools/list requests Causeway sent its children, all sessions together. */
async function listsSent(): Promise<number> {
  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^causeway_upstream_request_duration_seconds_count\{([^}]*)\} (\d+)/gm)) {
    if (m[1]!.includes('method="tools/list"')) n += Number(m[2]);
  }
  return n;
}

const names = async (client: Client) => (await client.listTools()).tools.map((x) => x.name);

t.test('20 tools/list of one legacy client on a stdio upstream cost 1 upstream list', async (t) => {
  const client = await legacyClient();
  const first = await names(client);
  t.ok(first.includes('echo'), 'the fixture lists its tools');
  for (let i = 1; i < 20; i++) t.same(await names(client), first, `list ${i + 1} is the same`);
  t.equal(await listsSent(), 1, 'one tools/list sent to the child');

  const other = await legacyClient();
  t.same(await names(other), first, 'another session lists the same tools');
  t.equal(await listsSent(), 2, "from its own child: a private answer is its session's alone");
});

t.test('a list_changed on the session drops what was kept', async (t) => {
  const client = await legacyClient();
  const first = await names(client);
  const before = await listsSent();
  await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
  const changed = await until(
    async () => {
      const now = await names(client);
      return now.includes('test_dynamic_tool') !== first.includes('test_dynamic_tool') && now;
    },
    { what: 'the changed list' },
  );
  t.ok(changed, 'the next list shows the change');
  t.equal(await listsSent(), before + 1, 'asked of the child once more');
});
