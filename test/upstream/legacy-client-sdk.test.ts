import t from 'tap';
import { CausewayError } from '../../src/errors.js';
import type { JsonObject, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../../src/jsonrpc.js';
import { SessionExpiredError } from '../../src/upstream/core/errors.js';
import { UpstreamClient, type HandshakeResult, type UpstreamEndpoint } from '../../src/upstream/http/legacy-client.js';
import { TargetSet } from '../../src/upstream/core/targets.js';
import { logSink, type LogSink } from './log-sink.js';
import { startSdkServer, type SdkFixture, type SdkFixtureOptions } from './sdk-server.js';
import { until } from '../helpers/until.js';

const SECRET = 'Bearer sdk-secret-token';
const INIT = {
  protocolVersion: '2025-11-25',
  capabilities: { elicitation: { form: {} } },
  clientInfo: { name: 'causeway-test', version: '0.0.0' },
};

interface Setup {
  fx: SdkFixture;
  sink: LogSink;
  client: UpstreamClient;
}

interface HasTeardown {
  teardown(fn: () => unknown): void;
}

async function setup(tt: HasTeardown, options: SdkFixtureOptions = {}): Promise<Setup> {
  const fx = await startSdkServer(options);
  const sink = logSink();
  const endpoint: UpstreamEndpoint = {
    name: 'sdk',
    targets: new TargetSet([fx.url], { ejectAfterFailures: 1, ejectMs: 1000 }),
    headers: { Authorization: SECRET },
    connectTimeoutMs: 1000,
    requestTimeoutMs: 5000,
    maxResponseBytes: 1 << 20,
  };
  const client = new UpstreamClient(endpoint, sink.log);
  tt.teardown(async () => {
    await client.destroy();
    await fx.close();
  });
  return { fx, sink, client };
}

function result(r: JsonRpcResponse): JsonObject {
  if ('error' in r) throw new Error(`unexpected error ${r.error.message}`);
  return r.result;
}

function firstText(r: JsonRpcResponse): unknown {
  const content = result(r).content as JsonObject[];
  return content[0]?.text;
}

function call(id: string | number, name: string, extra: JsonObject = {}): JsonRpcRequest {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, ...extra } };
}

/** What leaked into the log: the session id or a configured header value. */
function leaks(sink: LogSink, hs: HandshakeResult): string[] {
  const text = sink.text();
  if (sink.lines().length === 0) return ['(nothing logged)'];
  return [hs.sessionId ?? '', 'sdk-secret-token'].filter((s) => s !== '' && text.includes(s));
}

t.test('legacy_client-to-sdk_upstream-initialize: session id, negotiated version, initialized', async (t) => {
  const { fx, sink, client } = await setup(t);
  const hs = await client.initialize(INIT);

  t.match(hs.sessionId, /^[0-9a-f-]{36}$/);
  t.equal(hs.protocolVersion, '2025-11-25');
  t.match(hs.initializeResult, { serverInfo: { name: 'legacy-fixture' }, capabilities: { tools: {} } });
  t.equal(fx.initializeCount(), 1);

  const [init, initialized] = fx.seen;
  t.equal(fx.seen.length, 2);
  t.equal(init?.headers['mcp-session-id'], undefined, 'initialize carries no session id');
  t.equal(init?.headers['mcp-protocol-version'], undefined);
  t.equal(init?.headers['accept'], 'application/json, text/event-stream');
  t.match(initialized?.body, { jsonrpc: '2.0', method: 'notifications/initialized' });
  t.equal(initialized?.headers['mcp-session-id'], hs.sessionId);
  t.equal(initialized?.headers['mcp-protocol-version'], '2025-11-25');
  for (const s of fx.seen) t.equal(s.headers['authorization'], SECRET);
  t.same(leaks(sink, hs), [], 'no session id or credential in the log');
});

t.test('legacy_client-to-sdk_upstream-tools_list-and-call: headers on every POST', async (t) => {
  const { fx, sink, client } = await setup(t);
  const hs = await client.initialize(INIT);

  const list = await client.request(hs, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {}, undefined, {
    'Mcp-Method': 'tools/list',
  });
  t.equal(list.id, 1);
  const names = (result(list).tools as JsonObject[]).map((tool) => tool.name);
  t.same(names.sort(), ['echo', 'ping-back', 'poll', 'progress-elicit']);
  const post = fx.seen.at(-1);
  t.equal(post?.headers['mcp-method'], 'tools/list');
  t.equal(post?.headers['mcp-session-id'], hs.sessionId);
  t.equal(post?.headers['mcp-protocol-version'], '2025-11-25');
  t.equal(post?.headers['content-type'], 'application/json');

  const echo = await client.request(hs, call('e-1', 'echo', { arguments: { text: 'hi' } }), {}, undefined, {
    'Mcp-Method': 'tools/call',
    'Mcp-Name': 'echo',
  });
  t.equal(echo.id, 'e-1');
  t.equal(firstText(echo), 'hi');
  t.equal(fx.seen.at(-1)?.headers['mcp-name'], 'echo');

  const unknown = await client.request(hs, { jsonrpc: '2.0', id: 2, method: 'no/such/method' }, {});
  t.match(unknown, { id: 2, error: { code: -32601 } }, 'upstream JSON-RPC errors stay in-band');
  t.same(leaks(sink, hs), [], 'no session id or credential in the log');
});

t.test('legacy_client-to-sdk_upstream-progress-and-elicitation: handlers, respond() completes the call', async (t) => {
  const { fx, client } = await setup(t);
  const hs = await client.initialize(INIT);
  const notes: JsonRpcNotification[] = [];
  const asked: JsonRpcRequest[] = [];

  const res = await client.request(hs, call('c-1', 'progress-elicit', { _meta: { progressToken: 'tok-1' } }), {
    onNotification: (n) => notes.push(n),
    onServerRequest: (r) => {
      asked.push(r);
      void client.respond(hs, { jsonrpc: '2.0', id: r.id, result: { action: 'accept', content: { name: 'Ada' } } });
    },
  });

  t.equal(res.id, 'c-1');
  t.equal(firstText(res), 'hello Ada');
  t.same(
    notes.map((n) => [n.method, n.params?.progressToken, n.params?.progress]),
    [
      ['notifications/progress', 'tok-1', 1],
      ['notifications/progress', 'tok-1', 2],
      ['notifications/progress', 'tok-1', 3],
    ],
  );
  t.equal(asked.length, 1);
  t.equal(asked[0]?.method, 'elicitation/create');
  const answer = fx.seen.find((s) => (s.body as { result?: JsonObject } | undefined)?.result?.action === 'accept');
  t.equal(answer?.headers['mcp-session-id'], hs.sessionId, 'respond() carries the session');
});

t.test('legacy_client-to-sdk_upstream-ping: answered automatically mid-call', async (t) => {
  const { fx, client } = await setup(t);
  const hs = await client.initialize(INIT);
  const asked: JsonRpcRequest[] = [];

  const res = await client.request(hs, call('p-1', 'ping-back'), { onServerRequest: (r) => asked.push(r) });

  t.equal(firstText(res), 'pinged');
  t.equal(asked.length, 0, 'ping never reaches the handler');
  const pong = fx.seen.find((s) => {
    const b = s.body as { id?: unknown; result?: unknown; method?: unknown } | undefined;
    return b !== undefined && b.method === undefined && b.id !== undefined && b.result !== undefined;
  });
  t.same(pong?.body, { jsonrpc: '2.0', id: (pong?.body as { id: unknown } | undefined)?.id, result: {} });
});

t.test('legacy_client-to-sdk_upstream-2025_03_26: no MCP-Protocol-Version header', async (t) => {
  const { fx, client } = await setup(t);
  const hs = await client.initialize({ ...INIT, protocolVersion: '2025-03-26' });
  t.equal(hs.protocolVersion, '2025-03-26');
  await client.request(hs, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {});
  t.equal(fx.seen.length, 3);
  for (const s of fx.seen) t.equal(s.headers['mcp-protocol-version'], undefined);
  t.equal(fx.seen[2]?.headers['mcp-session-id'], hs.sessionId);
});

t.test('legacy_client-to-sdk_upstream-get_stream: notifications and pings, ends on abort', async (t) => {
  const { fx, client } = await setup(t);
  const hs = await client.initialize(INIT);
  const notes: JsonRpcNotification[] = [];
  const ac = new AbortController();

  const stream = await client.openStream(hs, { onNotification: (n) => notes.push(n) }, ac.signal);
  if (stream === 'unsupported') throw new Error('expected a stream');
  const get = fx.seen.at(-1);
  t.equal(get?.method, 'GET');
  t.equal(get?.headers['accept'], 'text/event-stream');
  t.equal(get?.headers['mcp-session-id'], hs.sessionId);

  const server = fx.servers.get(hs.sessionId ?? '');
  await server?.server.ping();
  server?.sendToolListChanged();
  await until(() => notes.length > 0, { what: 'the notification' });
  t.equal(notes[0]?.method, 'notifications/tools/list_changed');

  ac.abort();
  await stream.done;
  t.pass('done resolves once the signal aborts');
});

t.test('legacy_client-to-sdk_upstream-session_expired: 404 on a dropped session', async (t) => {
  const { fx, client } = await setup(t);
  const hs = await client.initialize(INIT);
  await fx.dropSession(hs.sessionId ?? '');

  await t.rejects(client.request(hs, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {}), SessionExpiredError);
  const changed: JsonRpcNotification = { jsonrpc: '2.0', method: 'notifications/roots/list_changed' };
  await t.rejects(client.notify(hs, changed), SessionExpiredError);
  await t.rejects(client.openStream(hs, {}, new AbortController().signal), SessionExpiredError);
});

t.test('legacy_client-to-sdk_upstream-terminate: DELETE ends the session, never throws', async (t) => {
  const { fx, client } = await setup(t);
  const hs = await client.initialize(INIT);
  t.equal(fx.servers.size, 1);

  await client.terminate(hs);
  const del = fx.seen.at(-1);
  t.equal(del?.method, 'DELETE');
  t.equal(del?.headers['mcp-session-id'], hs.sessionId);
  t.equal(fx.servers.size, 0);
  await client.terminate(hs);
  t.pass('a second terminate (404) resolves');
  await t.rejects(client.request(hs, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {}), SessionExpiredError);
});

t.test('legacy_client-to-sdk_upstream-stateless: no session id, GET stream unsupported', async (t) => {
  const { fx, client } = await setup(t, { stateless: true });
  const hs = await client.initialize(INIT);
  t.equal(hs.sessionId, undefined);
  t.equal(hs.protocolVersion, '2025-11-25');

  const echo = await client.request(hs, call(1, 'echo', { arguments: { text: 'stateless' } }), {});
  t.equal(firstText(echo), 'stateless');
  t.notOk(fx.seen.some((s) => s.headers['mcp-session-id'] !== undefined));
  t.equal(await client.openStream(hs, {}, new AbortController().signal), 'unsupported');
  const before = fx.seen.length;
  await client.terminate(hs);
  t.equal(fx.seen.length, before, 'no DELETE without a session');
});

t.test('legacy_client-to-sdk_upstream-sep1699_polling: stream closed mid-call, resumed by GET', async (t) => {
  const { fx, client } = await setup(t, { resumableRetryMs: 50 });
  const hs = await client.initialize(INIT);
  const notes: JsonRpcNotification[] = [];

  const res = await client.request(hs, call('poll-1', 'poll', { _meta: { progressToken: 'tp' } }), {
    onNotification: (n) => notes.push(n),
  });

  t.equal(firstText(res), 'polled');
  t.same(
    notes.map((n) => n.params?.progress),
    [1, 2],
  );
  const resume = fx.seen.find((s) => s.method === 'GET');
  t.ok(resume?.headers['last-event-id'], 'resumed with Last-Event-ID');
  t.equal(resume?.headers['mcp-session-id'], hs.sessionId);
  t.equal(fx.initializeCount(), 1, 'no hidden re-initialize');
});

t.test('legacy_client-to-sdk_upstream-close: in-flight calls finish, new calls refused', async (t) => {
  const { fx, client } = await setup(t);
  const hs = await client.initialize(INIT);
  const inflight = client.request(hs, call('c', 'poll'), {});
  await until(() => fx.seen.some((s) => (s.body as { id?: unknown } | undefined)?.id === 'c'), {
    what: 'the call to reach the upstream',
  });
  const closed = client.close();
  await t.rejects(client.request(hs, call('d', 'echo'), {}), CausewayError);
  t.equal(firstText(await inflight), 'polled');
  await closed;
});
