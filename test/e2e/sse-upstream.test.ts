// A 2024-11-05 HTTP+SSE upstream end to end: the legacy fixture in its HTTP+SSE mode (SDK 1.32.2
// SSEServerTransport: GET /sse, POST /messages) behind Causeway with upstream.transport=sse, and
// the real 2026-07-28 client (@modelcontextprotocol/client 2.4.0) in front: discover, lists, a
// call, progress, a multi-round elicitation answered by the client, and a listen that hears a
// list change. One SSE connection per pooled session; a drain closes them. A stream the upstream
// drops is counted, and the session's next request opens a new session.

import t from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { rawListen } from '../helpers/listen.js';
import { freePort } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { spawnFixture } from './upstreams.js';
import { post, toolCall } from './wire.js';

const upstream = await startLegacyServer({ transport: 'sse' });
const causeway = await startCauseway({
  'upstream.transport': 'sse',
  'upstream.url': upstream.url,
  'upstream.name': 'old',
});
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

async function modernClient(): Promise<Client> {
  const client = new Client(
    { name: 'e2e-sse', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
  await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url)));
  t.teardown(() => client.close());
  return client;
}

t.test('modern_client-to-sse_upstream-discover-lists-call-progress-elicitation', async (t) => {
  const client = await modernClient();
  const d = await client.discover();
  t.same(d.supportedVersions, ['2026-07-28']);
  t.ok(d.capabilities.tools, 'capabilities from the upstream initialize, over HTTP+SSE');
  const names = (await client.listTools()).tools.map((x) => x.name);
  t.ok(names.includes('echo') && names.includes('test_simple_text'));
  const r = await client.callTool({ name: 'echo', arguments: { text: 'over sse' } });
  t.same(r.content, [{ type: 'text', text: 'over sse' }]);
  const seen: number[] = [];
  await client.callTool(
    { name: 'test_tool_with_progress', arguments: {} },
    { onprogress: (p) => seen.push(p.progress) },
  );
  t.same(seen, [0, 50, 100], 'progress routed by its token');
  const asked = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
  t.same(
    asked.content,
    [{ type: 'text', text: 'Hello, Ada!' }],
    'the upstream asked, the client answered in a second round',
  );
  t.ok(upstream.stats().getStreamsOpened >= 1, 'the upstream saw its SSE stream opened');
});

t.test('modern_client-to-sse_upstream-listen-hears-a-list-change', async (t) => {
  const listen = await rawListen(t, causeway.url, 'sse-listen', { toolsListChanged: true });
  t.equal(listen.status, 200);
  t.equal((await listen.next())?.method, 'notifications/subscriptions/acknowledged');
  const { body, headers } = toolCall('test_trigger_tool_change', {}, 'trigger');
  t.equal((await post(causeway.url, body, headers)).status, 200);
  const change = await listen.next();
  t.equal(change?.method, 'notifications/tools/list_changed', 'the change reached the listener');
});

async function counter(causeway: RunningCauseway, series: string): Promise<number> {
  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

t.test('modern_client-to-sse_upstream-dropped-stream-is-counted-and-the-next-call-opens-a-new-session', async (t) => {
  const port = await freePort();
  const first = await spawnFixture(port, { t, args: ['--sse'] });
  const dropping = await startCauseway({
    'upstream.transport': 'sse',
    'upstream.url': first.url,
    'upstream.name': 'dropping',
    'log.level': 'warn',
  });
  t.teardown(() => dropping.close());
  const echo = (id: string) => {
    const { body, headers } = toolCall('echo', { text: id }, id);
    return post(dropping.url, body, headers);
  };
  t.equal((await echo('before')).status, 200);
  const drops = 'causeway_upstream_stream_drops_total{upstream="dropping"}';
  t.equal(await counter(dropping, drops), 0, 'no drop yet');

  // The upstream restarts: its end of every session stream goes with the old process.
  await first.kill();
  await until(async () => (await counter(dropping, drops)) === 1, { what: 'the drop to be counted', everyMs: 100 });
  const second = await spawnFixture(port, { t, args: ['--sse'] });
  const after = await echo('after');
  t.equal(after.status, 200, 'the next call is served');
  t.match(after.json, { id: 'after', result: { content: [{ type: 'text', text: 'after' }] } });
  t.equal((await second.stats()).initializeCount, 1, 'on a session opened on the new process');
  t.equal(
    await counter(dropping, 'causeway_upstream_initialize_total{upstream="dropping",reason="expired"}'),
    1,
    're-initialized once, as for a 404',
  );
  t.equal(await counter(dropping, drops), 1, 'one drop');
});
