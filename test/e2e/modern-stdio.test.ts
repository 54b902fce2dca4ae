// A 2026-only server over stdio behind Causeway: the modern fixture run as Causeway's child with
// the SDK 2.x stdio transport, legacy refused (`initialize` answered -32022). The era is found
// by server/discover on the child's stdin; 2026 is stateless, so one child per replica serves
// every principal (upstream.stdioPool, 1), the clients' ids and progress tokens kept apart on
// its one stdin. The 2.4.0 client is relayed; the SDK 1.32.2 client gets the translated legacy
// face, the server's input_required rounds put to it as real elicitation requests.

import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startCauseway, type Settings } from '../helpers/causeway.js';
import { alive } from '../helpers/processes.js';
import { until } from '../helpers/until.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/modern-server.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'causeway-modern-stdio-'));
const pidFile = join(dir, 'pids');

function settings(extra: Settings = {}): Settings {
  return {
    'upstream.transport': 'stdio',
    'upstream.command': process.execPath,
    'upstream.args': `${FIXTURE},--stdio,--pid-file,${pidFile}`,
    'upstream.name': 'modern-stdio',
    'principal.mode': 'header',
    'principal.header': 'x-user',
    'principal.hashSecret': 'modern-stdio-test-secret',
    'log.level': 'warn',
    ...extra,
  };
}

/** The children the fixture says were started (each appends its pid as it starts). */
function spawned(): number[] {
  try {
    return readFileSync(pidFile, 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

const causeway = await startCauseway(settings());
t.teardown(async () => {
  await causeway.close();
  for (const pid of spawned()) if (alive(pid)) process.kill(pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function metricsText(): Promise<string> {
  return (await fetch(`${causeway.adminUrl}/metrics`)).text();
}

async function modernClient(user: string, url = causeway.url!): Promise<Client> {
  const client = new Client(
    { name: 'modern-stdio-e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { 'x-user': user } } }),
  );
  return client;
}

t.test('one child process on the replica serves 20 principals, their ids and progress tokens kept apart', async (t) => {
  const users = Array.from({ length: 20 }, (_, i) => `user-${i}`);
  const clients = await Promise.all(users.map((u) => modernClient(u)));
  t.teardown(() => Promise.all(clients.map((c) => c.close())));
  const started = performance.now();
  const calls = await Promise.all(
    clients.map(async (client) => {
      const progress: number[] = [];
      const result = await client.callTool(
        { name: 'test_tool_with_progress', arguments: {} },
        { onprogress: (p) => progress.push(p.progress) },
      );
      return { progress, result };
    }),
  );
  const ms = Math.round(performance.now() - started);
  for (const [i, { progress, result }] of calls.entries()) {
    t.same(progress, [0, 50, 100], `${users[i]}: its own progress, in order`);
    t.match(result.content, [{ type: 'text' }], `${users[i]}: its own answer`);
  }
  const pids = spawned();
  t.equal(
    pids.length,
    1,
    `20 principals' calls (${calls.length} at once, ${ms} ms) started ${pids.length} child process`,
  );
  const metrics = await metricsText();
  t.match(metrics, /causeway_upstream_processes\{upstream="modern-stdio"\} 1/, 'the gauge counts the one child');
  t.match(
    metrics,
    /causeway_upstream_era\{upstream="modern-stdio",era="modern"\} 1/,
    'found modern by server/discover on its stdin',
  );
});

t.test('the 2.4.0 client pinned to 2026-07-28 discovers, lists and calls tools through it', async (t) => {
  const client = await modernClient('ada');
  t.teardown(() => client.close());
  const d = await client.discover();
  t.ok(d.capabilities.tools, 'tools advertised by the child');
  t.equal(client.getServerVersion()?.name, 'causeway-modern-fixture', "the child's own serverInfo");
  const { tools } = await client.listTools();
  t.ok(
    tools.some((tool) => tool.name === 'test_simple_text'),
    'tools listed',
  );
  const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.match(result.content, [{ type: 'text' }], 'the tool answered');
  const asked = await client
    .callTool({ name: 'test_input_required_result_elicitation', arguments: {} })
    .catch((err: Error) => err);
  t.notOk(
    asked instanceof Error && /unavailable|invalid response/i.test(asked.message),
    'an input_required round is relayed, not broken',
  );
  t.equal(spawned().length, 1, 'still the one child');
});

t.test('the SDK 1.32.2 client gets the translated face and completes an elicitation through it', async (t) => {
  const client = new LegacyClient(
    { name: 'legacy-stdio-e2e', version: '1.0.0' },
    { capabilities: { elicitation: {} } },
  );
  await client.connect(new LegacyTransport(new URL(causeway.url!), { requestInit: { headers: { 'x-user': 'bob' } } }));
  t.teardown(() => client.close());
  t.equal(client.getServerVersion()?.name, 'causeway-modern-fixture', 'serverInfo from server/discover');
  let asked = 0;
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked += 1;
    return { action: 'accept', content: { user_name: 'Ada', name: 'Ada' } };
  });
  const { tools } = await client.listTools();
  t.ok(
    tools.some((tool) => tool.name === 'test_input_required_result_elicitation'),
    'tools listed',
  );
  const elicited = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
  t.equal(asked, 1, 'the round became one real elicitation request');
  t.match(JSON.stringify(elicited.content), /Ada/, 'the answer reached the child');
  t.notOk('resultType' in elicited, 'no 2026-only field reaches the legacy client');
  t.equal(spawned().length, 1, 'no child per legacy session: the one child serves it too');
});

t.test('a child killed is restarted at the next request', async (t) => {
  const [pid] = spawned();
  process.kill(pid!, 'SIGKILL');
  await until(async () => /causeway_upstream_processes\{upstream="modern-stdio"\} 0/.test(await metricsText()), {
    what: 'the child seen gone',
  });
  const client = await modernClient('carol');
  t.teardown(() => client.close());
  const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.match(result.content, [{ type: 'text' }], 'served again');
  t.match(
    await metricsText(),
    /causeway_upstream_process_restarts_total\{upstream="modern-stdio"\} 1/,
    'counted as a restart',
  );
  t.equal(spawned().length, 2, 'one new child');
});

t.test('a 2026 child slower to start than the probe waits is found modern by its refusal of initialize', async (t) => {
  // The shell holds the child back 2 s before node starts it; the probe waits 300 ms, so it hears
  // nothing and the era is taken as legacy. The legacy child then refuses Causeway's initialize
  // with -32022 naming 2026-07-28, which is answer enough: the request is served as modern.
  const slowPids = join(dir, 'slow-pids');
  const slow = await startCauseway(
    settings({
      'upstream.command': '/bin/sh',
      'upstream.args': `-c,sleep 2; exec "$0" "$@",${process.execPath},${FIXTURE},--stdio,--pid-file,${slowPids}`,
      'upstream.connectTimeoutMs': 300,
    }),
  );
  t.teardown(async () => {
    await slow.close();
    const pids = readFileSync(slowPids, 'utf8').split('\n').filter(Boolean).map(Number);
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
  const client = await modernClient('slow', slow.url!);
  t.teardown(() => client.close());
  const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.match(result.content, [{ type: 'text' }], 'the tool answered');
  const metrics = await (await fetch(`${slow.adminUrl}/metrics`)).text();
  t.match(metrics, /causeway_upstream_era\{upstream="modern-stdio",era="modern"\} 1/, 'modern');
  const view = (await (await fetch(`${slow.adminUrl}/status.json`)).json()) as { upstreams: unknown };
  t.match(view.upstreams, [{ name: 'modern-stdio', era: 'modern', eraFound: 'refusal' }], 'found by the refusal');
});
