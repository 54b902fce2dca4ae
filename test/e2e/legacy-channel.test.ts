// Legacy clients on channel upstreams: the legacy SDK client (@modelcontextprotocol/sdk 1.32.2,
// Streamable HTTP) through Causeway to the legacy fixture run as a stdio child and over 2024-11-05
// HTTP+SSE. Each legacy session is an upstream session of its own (a child, a connection): its
// own initialize, per-session state, elicitation asked on the call's SSE stream, progress, a
// list change on the client's GET stream; DELETE ends the child; a session id is its principal's.

import t, { type Test } from 'tap';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway, type RunningCauseway, type Settings } from '../helpers/causeway.js';
import { alive } from '../helpers/processes.js';
import { ELICIT } from '../mrtr/wire.js';
import { until } from '../helpers/until.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));
const PRINCIPAL_HEADER = 'x-causeway-principal';

const principals: Settings = {
  'principal.mode': 'header',
  'principal.hashSecret': 'legacy-channel-secret-0123456789',
  'upstream.name': 'fixture',
};
const stdioSettings: Settings = {
  ...principals,
  'upstream.transport': 'stdio',
  'upstream.command': process.execPath,
  'upstream.args': `${FIXTURE},--stdio`,
};

interface LegacyPeer {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** True once the client's GET stream was answered 200, and what it carried so far. */
  get: { opened: boolean; text: string };
}

/** A legacy client connected through Causeway; it answers elicitations with name Ada. */
async function legacyClient(t: Test, url: string, principal = 'alice'): Promise<LegacyPeer> {
  const get = { opened: false, text: '' };
  // Reads along the GET stream, to tell what arrived on it rather than on a call's stream.
  const tapGet = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init);
    if (init?.method !== 'GET' || !res.ok || res.body === null) return res;
    get.opened = true;
    const [mine, theirs] = res.body.tee();
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of mine) get.text += decoder.decode(chunk, { stream: true });
    })().catch(() => {});
    return new Response(theirs, { status: res.status, headers: res.headers });
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { [PRINCIPAL_HEADER]: principal } },
    fetch: tapGet,
  });
  const client = new Client({ name: 'legacy-channel', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
  await client.connect(transport);
  t.teardown(() => client.close());
  return { client, transport, get };
}

const textOf = (r: unknown): string | undefined => (r as { content?: Array<{ text?: string }> }).content?.[0]?.text;

async function call(peer: LegacyPeer, name: string, args: Record<string, unknown> = {}): Promise<string | undefined> {
  return textOf(await peer.client.callTool({ name, arguments: args }));
}

/** What every channel upstream serves a legacy client: each session its own upstream session. */
async function servesLegacyClients(t: Test, url: string): Promise<void> {
  const a = await legacyClient(t, url);
  t.equal(a.client.getServerVersion()?.name, 'causeway-legacy-fixture', "the upstream's own initialize result");
  t.equal(a.client.getServerCapabilities()?.tools !== undefined, true, 'its capabilities');
  t.match(a.transport.sessionId, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/, 'a session id bound to the principal');
  const tools = (await a.client.listTools()).tools.map((x) => x.name);
  t.ok(tools.includes('echo') && tools.includes('counter'));
  t.equal(await call(a, 'echo', { text: 'héllo, old client' }), 'héllo, old client');

  t.same(
    [await call(a, 'counter'), await call(a, 'counter'), await call(a, 'counter')],
    ['1', '2', '3'],
    'one upstream session for the whole legacy session',
  );
  const b = await legacyClient(t, url);
  t.equal(await call(b, 'counter'), '1', "another legacy client's session is another upstream session");
  t.equal(await call(a, 'counter'), '4', 'and the first one goes on');

  t.equal(
    await call(a, ELICIT),
    'Hello, Ada!',
    "the server's elicitation went to the client over the call's stream and back",
  );
  const progress: number[] = [];
  await a.client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  t.same(progress, [0, 50, 100], 'progress reached the call');

  let changes = 0;
  a.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void (changes += 1));
  t.ok(await until(() => a.get.opened, { what: 'the GET stream' }), 'the client opened its GET stream');
  await call(a, 'test_trigger_tool_change');
  t.ok(await until(() => changes === 1, { what: 'tools/list_changed' }), 'tools/list_changed reached the client');
  t.match(a.get.text, /notifications\/tools\/list_changed/, 'on its GET stream');
}

async function metric(causeway: RunningCauseway, name: string): Promise<number> {
  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  return Number(new RegExp(`^${name}\\{upstream="fixture"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
}

/** A child the drain should have stopped is killed when the test ends, pass or fail. */
function killedAtEnd(t: Test, pid: number): void {
  t.teardown(() => {
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
}

function legacyPost(url: string, sessionId: string, principal: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
      [PRINCIPAL_HEADER]: principal,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
  });
}

t.test('legacy_client-to-stdio_upstream: each legacy session its own child', async (t) => {
  const causeway = await startCauseway(stdioSettings);
  t.teardown(() => causeway.close());
  await servesLegacyClients(t, causeway.url);
});

t.test('legacy_client-to-stdio_upstream: DELETE stops the child; ids belong to their principal', async (t) => {
  const causeway = await startCauseway(stdioSettings);
  t.teardown(() => causeway.close());
  const before = await metric(causeway, 'causeway_upstream_processes');
  const peer = await legacyClient(t, causeway.url, 'alice');
  t.equal(await call(peer, 'echo', { text: 'x' }), 'x');
  t.equal(await metric(causeway, 'causeway_upstream_processes'), before + 1, 'one more child for the legacy session');
  const pid = (JSON.parse((await call(peer, 'fixture_stats')) ?? '{}') as { pid: number }).pid;
  killedAtEnd(t, pid);
  const sessionId = peer.transport.sessionId!;

  const stolen = await legacyPost(causeway.url, sessionId, 'mallory');
  t.equal(stolen.status, 404, "another principal's replay of the id is an unknown session");
  t.match(await stolen.json(), { jsonrpc: '2.0', id: 7, error: { code: -32600, message: 'Session not found' } });
  const bogus = await legacyPost(causeway.url, 'bm90LWEtc2Vzc2lvbg.AAAAAAAAAAAAAAAAAAAAAA', 'alice');
  t.equal(bogus.status, 404, 'a made-up id too');
  t.match(await bogus.json(), { error: { code: -32600 } });
  const own = await legacyPost(causeway.url, sessionId, 'alice');
  t.equal(own.status, 200, 'the owner still gets through');
  await own.body?.cancel();

  await peer.transport.terminateSession();
  t.ok(await until(() => !alive(pid), { what: 'the child to stop' }), 'DELETE stopped the child');
  t.equal(await metric(causeway, 'causeway_upstream_processes'), before, 'and it is no longer counted');
  const after = await legacyPost(causeway.url, sessionId, 'alice');
  t.equal(after.status, 404, 'the ended session is unknown: the client initializes again');
});

t.test(
  'legacy_client-to-stdio_upstream: batches and bodies that are ' +
    'not JSON are refused, a request without session id is 400',
  async (t) => {
    const causeway = await startCauseway(stdioSettings);
    t.teardown(() => causeway.close());
    const peer = await legacyClient(t, causeway.url);
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      [PRINCIPAL_HEADER]: 'alice',
    };
    const batch = await fetch(causeway.url, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': peer.transport.sessionId! },
      body: JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]),
    });
    t.equal(batch.status, 400);
    t.match(await batch.json(), { error: { code: -32600, message: /batches are not supported/ } });
    const sessionless = await fetch(causeway.url, {
      method: 'POST',
      headers: { ...headers, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    t.equal(sessionless.status, 400);
    t.match(await sessionless.json(), { error: { code: -32600, message: /Mcp-Session-Id is required/ } });
    const garbled = await fetch(causeway.url, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': peer.transport.sessionId! },
      body: '{"jsonrpc": "2.0", "id": 1,',
    });
    t.equal(garbled.status, 400, 'a body that is not JSON, on a session');
    t.match(await garbled.json(), { error: { code: -32700 } });
    t.ok((await peer.client.listTools()).tools.length > 0, 'and the session serves on');
  },
);

t.test(
  'legacy_client-to-stdio_upstream: JSON answers without SSE ' +
    'in Accept; a session unused for store.idleTtlMs is ended',
  async (t) => {
    const causeway = await startCauseway({ ...stdioSettings, 'store.idleTtlMs': 1000 });
    t.teardown(() => causeway.close());
    const headers = { 'content-type': 'application/json', accept: 'application/json', [PRINCIPAL_HEADER]: 'alice' };
    const rpc = (body: object, sessionId?: string) =>
      fetch(causeway.url, {
        method: 'POST',
        headers:
          sessionId === undefined
            ? headers
            : { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify(body),
      });
    const init = await rpc({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    t.equal(init.status, 200);
    t.match(await init.json(), {
      jsonrpc: '2.0',
      id: 'init',
      result: { protocolVersion: '2025-11-25', serverInfo: { name: 'causeway-legacy-fixture' } },
    });
    const sessionId = init.headers.get('mcp-session-id')!;
    t.equal((await rpc({ jsonrpc: '2.0', method: 'notifications/initialized' }, sessionId)).status, 202);
    const stats = await rpc(
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'fixture_stats', arguments: {} } },
      sessionId,
    );
    t.equal(stats.headers.get('content-type'), 'application/json');
    const body = (await stats.json()) as { id: number; result: { content: Array<{ text: string }> } };
    t.equal(body.id, 2, "the client's own id");
    const { pid, stats: counts } = JSON.parse(body.result.content[0]!.text) as {
      pid: number;
      stats: { initializeCount: number };
    };
    killedAtEnd(t, pid);
    t.equal(counts.initializeCount, 1, "one initialize upstream: the client's own");
    t.ok(
      await until(() => !alive(pid), { what: 'the idle child to stop', everyMs: 50 }),
      'the idle session was ended with its child',
    );
    t.equal((await rpc({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, sessionId)).status, 404, 'and is unknown now');
  },
);

t.test('legacy_client-to-sse_upstream: each legacy session its own HTTP+SSE connection', async (t) => {
  const upstream = await startLegacyServer({ transport: 'sse' });
  const causeway = await startCauseway({ ...principals, 'upstream.transport': 'sse', 'upstream.url': upstream.url });
  t.teardown(async () => {
    await causeway.close();
    await upstream.close();
  });
  await servesLegacyClients(t, causeway.url);
  const peer = await legacyClient(t, causeway.url);
  const open = upstream.stats().sessionsOpen;
  await peer.transport.terminateSession();
  t.ok(
    await until(() => upstream.stats().sessionsOpen === open - 1, { what: 'the session to close upstream' }),
    "DELETE closed the session's connection",
  );
});
