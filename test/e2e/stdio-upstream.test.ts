// A stdio upstream end to end: the legacy fixture run as Causeway's child process (SDK 1.32.2
// StdioServerTransport), the real 2026-07-28 client (@modelcontextprotocol/client 2.4.0) in
// front. One process per pooled session; many calls at once on it; a killed process fails its
// call cleanly and the next request gets a fresh one; maxProcesses stops an idle process first,
// and refuses with 503 when none is idle; a drain stops every child.

import t, { type Test } from 'tap';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { spawnCauseway, startCauseway, type Settings } from '../helpers/causeway.js';
import { alive } from '../helpers/processes.js';
import { callTool, ELICIT, textOf, type Json } from '../mrtr/wire.js';
import { until } from '../helpers/until.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));

function stdioSettings(extra: Settings = {}): Settings {
  return {
    'upstream.transport': 'stdio',
    'upstream.command': process.execPath,
    'upstream.args': `${FIXTURE},--stdio`,
    'upstream.name': 'fixture',
    ...extra,
  };
}

interface FixtureStats {
  pid: number;
  slowInFlight: number;
  slowMaxInFlight: number;
}

async function fixtureStats(url: string, caps?: Record<string, unknown>): Promise<FixtureStats> {
  const r = await callTool(url, 'fixture_stats', {}, caps === undefined ? {} : { caps });
  const text = textOf(r);
  if (text === undefined) throw new Error(`fixture_stats failed: ${JSON.stringify(r.body)}`);
  return JSON.parse(text) as FixtureStats;
}

/** Until the child of the caps' session runs a slow call (asked through the same process). */
function slowRunning(url: string, caps?: Record<string, unknown>): Promise<boolean> {
  return until(async () => (await fixtureStats(url, caps)).slowInFlight > 0, { what: 'a slow call in the child' });
}

/** Every child a test's Causeway started is gone once it drained. */
function stopsChildren(t: Test, causeway: { close(): Promise<void> }, pids: Set<number>): void {
  t.teardown(async () => {
    await causeway.close();
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
}

t.test(
  'the modern client through Causeway to a stdio legacy server: discover, lists, a call, a multi-round elicitation',
  async (t) => {
    const causeway = await startCauseway(stdioSettings());
    const pids = new Set<number>();
    stopsChildren(t, causeway, pids);
    const client = new Client(
      { name: 'stdio-e2e', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
    await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url)));
    t.teardown(() => client.close());

    const d = await client.discover();
    t.ok(d.capabilities.tools, 'tools advertised');
    t.equal(client.getServerVersion()?.name, 'causeway-legacy-fixture', 'serverInfo from the child initialize');
    const tools = await client.listTools();
    t.ok(tools.tools.some((x) => x.name === 'echo'));
    const prompts = await client.listPrompts();
    t.ok(prompts.prompts.some((p) => p.name === 'test_simple_prompt'));
    const resources = await client.listResources();
    t.ok(resources.resources.some((r) => r.uri === 'test://static-text'));
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'héllo over stdio' } });
    t.same(echoed.content, [{ type: 'text', text: 'héllo over stdio' }]);
    const progress: number[] = [];
    await client.callTool(
      { name: 'test_tool_with_progress', arguments: {} },
      { onprogress: (p) => progress.push(p.progress) },
    );
    t.same(progress, [0, 50, 100], 'progress routed to its call by token');
    const asked = await client.callTool({ name: ELICIT, arguments: {} });
    t.same(
      asked.content,
      [{ type: 'text', text: 'Hello, Ada!' }],
      'the ask on the channel became an input_required round and back',
    );
    const multi = await callTool(causeway.url, 'test_input_required_result_multi_round');
    t.equal(multi.body?.result?.resultType, 'input_required', 'first round of a two-round tool');

    const stats = await fixtureStats(causeway.url, { elicitation: { form: {} } });
    pids.add(stats.pid);
    t.ok(
      causeway.logs.some(
        (l) =>
          l.includes('upstream stderr') &&
          l.includes('serving one session on stdio') &&
          l.includes('"upstream":"fixture"'),
      ),
      'the child stderr is logged, tagged with the upstream',
    );

    const legacy = await fetch(causeway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
      }),
    });
    t.equal(
      legacy.status,
      200,
      'a legacy client on the same mount gets a session of its own (test/e2e/legacy-channel.test.ts)',
    );
    t.ok(legacy.headers.get('mcp-session-id'));
    t.equal(((await legacy.json()) as Json).result.serverInfo.name, 'causeway-legacy-fixture');

    await client.close();
    await causeway.close();
    t.notOk(alive(stats.pid), 'the drain stopped the child');
  },
);

t.test(
  'listen over stdio: list_changed and resources/updated ' +
    'reach the listener once each, and the drain ends the stream',
  async (t) => {
    const causeway = await startCauseway(stdioSettings());
    const pids = new Set<number>();
    stopsChildren(t, causeway, pids);
    const client = new Client(
      { name: 'stdio-listen', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url)));
    t.teardown(() => client.close());
    const seen = { tools: 0, updated: [] as string[] };
    client.setNotificationHandler('notifications/tools/list_changed', () => void (seen.tools += 1));
    client.setNotificationHandler('notifications/resources/updated', (n) => void seen.updated.push(n.params.uri));
    const sub = await client.listen({ toolsListChanged: true, resourceSubscriptions: ['test://watched-resource'] });
    await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
    t.ok(
      await until(() => seen.tools === 1, { what: 'tools/list_changed' }),
      'tools/list_changed reached the listener',
    );
    await client.callTool({ name: 'test_trigger_resource_update', arguments: {} });
    t.ok(
      await until(() => seen.updated.length === 1, { what: 'resources/updated' }),
      'resources/updated reached the listener',
    );
    t.same(seen.updated, ['test://watched-resource']);
    await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
    t.ok(await until(() => seen.tools === 2, { what: 'the second tools/list_changed' }), 'the second change too');
    await new Promise((r) => setTimeout(r, 100)); // negative check: no second copy follows
    t.equal(seen.tools, 2, 'each change once, not once per path');
    await causeway.close();
    t.equal(await sub.closed, 'graceful');
  },
);

t.test('50 calls at once on one stdio process are all in flight together', async (t) => {
  const causeway = await startCauseway(stdioSettings());
  const pids = new Set<number>();
  stopsChildren(t, causeway, pids);
  const first = await fixtureStats(causeway.url);
  pids.add(first.pid);
  const replies = await Promise.all(
    Array.from({ length: 50 }, () => callTool(causeway.url, 'slow', { arguments: { ms: 1500 } })),
  );
  t.same(
    replies.map((r) => textOf(r)),
    Array.from({ length: 50 }, () => 'done'),
    'every call answered',
  );
  const after = await fixtureStats(causeway.url);
  t.equal(after.pid, first.pid, 'one process served them all');
  t.equal(after.slowMaxInFlight, 50, 'all 50 were running in the child at once (no serialization)');
});

t.test('a child killed mid-call: that call fails with 502 -32603, the next request gets a fresh process', async (t) => {
  const causeway = await startCauseway(stdioSettings());
  const pids = new Set<number>();
  stopsChildren(t, causeway, pids);
  const before = await fixtureStats(causeway.url);
  pids.add(before.pid);
  const call = callTool(causeway.url, 'slow', { arguments: { ms: 30_000 } });
  t.ok(await slowRunning(causeway.url), 'the slow call reached the child');
  process.kill(before.pid, 'SIGKILL');
  const failed = await call;
  t.equal(failed.status, 502);
  t.equal(failed.body?.error?.code, -32603);
  const next = await fixtureStats(causeway.url);
  pids.add(next.pid);
  t.not(next.pid, before.pid, 'a fresh process');
  t.equal(textOf(await callTool(causeway.url, 'echo', { arguments: { text: 'again' } })), 'again');
  const metrics = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  t.match(metrics, /causeway_upstream_process_restarts_total\{upstream="fixture"\} 1/);
  t.match(metrics, /causeway_upstream_processes\{upstream="fixture"\} 1/);
});

t.test('maxProcesses: the idle process is stopped for a new session; with none idle, 503 overloaded', async (t) => {
  const causeway = await startCauseway(stdioSettings({ 'upstream.maxProcesses': 1 }));
  const pids = new Set<number>();
  stopsChildren(t, causeway, pids);
  const a = await fixtureStats(causeway.url, { roots: {} });
  pids.add(a.pid);
  // Other capabilities are another pooled session: another process, so A's (idle) goes.
  const b = await fixtureStats(causeway.url, { sampling: {} });
  pids.add(b.pid);
  t.not(b.pid, a.pid);
  t.ok(await until(() => !alive(a.pid), { what: 'the idle process to stop' }), 'the idle process was stopped');

  const busy = callTool(causeway.url, 'slow', { arguments: { ms: 1500 } }, { caps: { sampling: {} } });
  t.ok(await slowRunning(causeway.url, { sampling: {} }), 'the slow call reached the child');
  const refused = await callTool(causeway.url, 'echo', { arguments: { text: 'x' } }, { caps: { roots: {} } });
  t.equal(refused.status, 503, 'no idle process to stop');
  t.equal(refused.body?.error?.code, -32603);
  t.equal(textOf(await busy), 'done', 'the busy call was not disturbed');
  const again = await callTool(causeway.url, 'echo', { arguments: { text: 'y' } }, { caps: { roots: {} } });
  t.equal(textOf(again), 'y', 'once idle, the other session takes the slot');
});

t.test('a child unused for store.idleTtlMs is stopped; the next request starts another', async (t) => {
  const causeway = await startCauseway(stdioSettings({ 'store.idleTtlMs': 1000 }));
  const pids = new Set<number>();
  stopsChildren(t, causeway, pids);
  const first = await fixtureStats(causeway.url);
  pids.add(first.pid);
  t.ok(
    await until(() => !alive(first.pid), { what: 'the idle process to be reaped', everyMs: 50 }),
    'reaped once idle',
  );
  const next = await fixtureStats(causeway.url);
  pids.add(next.pid);
  t.not(next.pid, first.pid);
});

t.test('Causeway as its own process: SIGTERM drains it and stops its children', async (t) => {
  const causeway = await spawnCauseway(stdioSettings(), { t, graceMs: 15_000 });
  const stats = await fixtureStats(causeway.url);
  t.teardown(() => {
    if (alive(stats.pid)) process.kill(stats.pid, 'SIGKILL');
  });
  t.ok(alive(stats.pid));
  await causeway.close();
  t.notOk(alive(stats.pid), 'the child went with it');
});

t.test('two stdio upstreams federated on one mount, configured per entry of upstreams', async (t) => {
  const entry = (label: string) => ({
    transport: 'stdio',
    command: process.execPath,
    args: [FIXTURE, '--stdio', '--label', label],
    maxProcesses: 2,
  });
  const causeway = await startCauseway({
    upstreams: JSON.stringify({ left: entry('L'), right: entry('R') }),
    mounts: JSON.stringify({ '/mcp': { upstreams: ['left', 'right'] } }),
  });
  t.teardown(() => causeway.close());
  t.equal(textOf(await callTool(causeway.url, 'left__about_L')), 'served by L');
  t.equal(textOf(await callTool(causeway.url, 'right__about_R')), 'served by R');
  const metrics = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  // Sessions of other capabilities (the federation's start-up name check, the caller) have their own process each.
  for (const name of ['left', 'right']) {
    const n = Number(new RegExp(`causeway_upstream_processes\\{upstream="${name}"\\} (\\d+)`).exec(metrics)?.[1]);
    t.ok(n >= 1 && n <= 2, `${name}: ${n} processes, within its maxProcesses`);
  }
});

t.test('config: stdio needs a command; url is not used with it', async (t) => {
  await t.rejects(
    startCauseway({ 'upstream.transport': 'stdio' }),
    /upstream\.command: required when transport is stdio/,
  );
  await t.rejects(
    startCauseway({ ...stdioSettings(), 'upstream.url': 'http://127.0.0.1:1/mcp' }),
    /url and urls are not used when transport is stdio/,
  );
});
