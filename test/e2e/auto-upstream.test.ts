// `upstream.transport: auto` end to end, the real 2026-07-28 client (@modelcontextprotocol/client
// 2.4.0) in front: Causeway finds Streamable HTTP at the Streamable HTTP fixture and HTTP+SSE at
// the fixture in its HTTP+SSE mode (at /sse beside the /mcp URL it was given), at the first
// session and not at start-up, logs what it found once, and serves legacy clients as the
// transport found allows. An upstream down at the first request fails it cleanly; once the
// upstream is up, the next request probes again and is served.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { callTool, textOf } from '../mrtr/wire.js';
import { spawnFixture } from './upstreams.js';
import { post, toolCall } from './wire.js';

const LEGACY_INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
};
const LEGACY_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function autoCauseway(t: Test, url: string): Promise<RunningCauseway> {
  const causeway = await startCauseway({ 'upstream.transport': 'auto', 'upstream.url': url, 'upstream.name': 'found' });
  t.teardown(() => causeway.close());
  return causeway;
}

function logLines(causeway: RunningCauseway, msg: string): Array<Record<string, unknown>> {
  return causeway.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === msg);
}

/** Echo through Causeway from a client with these capabilities (another set: another upstream session). */
async function echo(t: Test, url: string, text: string, capabilities: Record<string, unknown> = {}): Promise<unknown> {
  const client = new Client(
    { name: 'e2e-auto', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.teardown(() => client.close());
  return (await client.callTool({ name: 'echo', arguments: { text } })).content;
}

/** Two clients with different capabilities (two upstream sessions), then the one detection logged. */
async function twoSessionsOneDetection(
  t: Test,
  causeway: RunningCauseway,
  transport: string,
  path: string,
): Promise<void> {
  t.same(await echo(t, causeway.url, 'first'), [{ type: 'text', text: 'first' }]);
  t.same(await echo(t, causeway.url, 'second', { elicitation: { form: {} } }), [{ type: 'text', text: 'second' }]);
  const found = logLines(causeway, 'upstream transport detected');
  t.equal(found.length, 1, 'found and logged once for both sessions');
  t.match(found[0], { upstream: 'found', transport, path });
}

/** A legacy client's initialize is served, on a session of its own. */
async function legacyServed(t: Test, causeway: RunningCauseway, how: string): Promise<void> {
  const legacy = await post(causeway.url, LEGACY_INITIALIZE, LEGACY_HEADERS);
  t.equal(legacy.status, 200, `a legacy client is ${how}`);
  t.ok(legacy.headers['mcp-session-id'], 'with its own upstream session');
}

t.test('modern_client-to-auto_upstream-finds-streamable_http', async (t) => {
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const causeway = await autoCauseway(t, upstream.url);
  t.equal(upstream.stats().initializeCount, 0, 'nothing probed at start-up');
  await twoSessionsOneDetection(t, causeway, 'streamable-http', '/mcp');
  t.equal(upstream.stats().initializeCount, 3, 'the probe, then one initialize per session');
  await legacyServed(t, causeway, 'passed through to the Streamable HTTP upstream');
});

t.test('modern_client-to-auto_upstream-finds-sse-beside-mcp', async (t) => {
  const upstream = await startLegacyServer({ transport: 'sse' });
  t.teardown(() => upstream.close());
  const causeway = await autoCauseway(t, upstream.url.replace(/\/sse$/, '/mcp'));
  t.equal(upstream.stats().getStreamsOpened, 0, 'nothing probed at start-up');
  await twoSessionsOneDetection(t, causeway, 'sse', '/sse');
  t.equal(upstream.stats().getStreamsOpened, 3, 'the probe stream, then one stream per session');
  await legacyServed(t, causeway, 'served by the legacy face, as on an sse mount');
  t.equal(upstream.stats().getStreamsOpened, 4, 'its own SSE stream upstream');
});

t.test('modern_client-to-auto_upstream-down-then-up', async (t) => {
  const port = await freePort();
  const causeway = await autoCauseway(t, `http://127.0.0.1:${port}/mcp`);
  const { body, headers } = toolCall('echo', { text: 'anyone there?' }, 'down');
  const down = await post(causeway.url, body, headers);
  t.ok(down.status === 502 || down.status === 503, `answered ${down.status}`);
  t.match(
    down.json,
    { jsonrpc: '2.0', id: 'down', error: { code: -32603 } },
    'a JSON-RPC error, our failure not the client’s',
  );
  t.equal(logLines(causeway, 'upstream transport probe failed; the next caller probes again').length, 1);
  const legacyDown = await post(causeway.url, LEGACY_INITIALIZE, LEGACY_HEADERS);
  t.ok(legacyDown.status === 502 || legacyDown.status === 503, `a legacy client too is answered ${legacyDown.status}`);

  await spawnFixture(port, { t, args: ['--sse'] });
  const up = await post(causeway.url, toolCall('echo', { text: 'now' }, 'up').body, headers);
  t.equal(up.status, 200, 'probed again and served');
  t.match(up.json, { id: 'up', result: { content: [{ type: 'text', text: 'now' }] } });
  t.match(logLines(causeway, 'upstream transport detected'), [{ transport: 'sse', path: '/sse' }]);
});

t.test(
  'modern_client-to-two_replicas-to-auto_sse_upstream: a session ' +
    'found to be HTTP+SSE is reached from the other replica',
  async (t) => {
    const upstream = await startLegacyServer({ transport: 'sse' });
    t.teardown(() => upstream.close());
    const redis = await startRedis(t);
    const settings = {
      'upstream.transport': 'auto',
      'upstream.url': upstream.url,
      'upstream.name': 'found',
      'store.kind': 'redis',
      'store.redisUrl': redis.url,
      'mrtr.stateKeys': randomBytes(32).toString('base64'),
    };
    const replicas = await Promise.all([startCauseway(settings), startCauseway(settings)]);
    t.teardown(() => Promise.all(replicas.map((r) => r.close())));
    const counts: Array<string | undefined> = [];
    // Both replicas find the transport after listening; the second's first call needs the first's relay.
    for (let i = 0; i < 4; i++) counts.push(textOf(await callTool(replicas[i % 2]!.url, 'counter')));
    t.same(counts, ['1', '2', '3', '4'], 'one upstream session (one SSE stream), whichever replica served');
  },
);
