// The 2024-11-05 HTTP+SSE channel and transport detection, against the legacy fixture in its SSE
// mode (the SDK's SSEServerTransport) and small raw servers for upstreams that misbehave.

import t, { type Test } from 'tap';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { CausewayError } from '../../src/errors.js';
import type { JsonRpcMessage, JsonRpcResponse } from '../../src/jsonrpc.js';
import {
  detectTransport,
  SseChannelOpener,
  TransportMemo,
  type MessageChannel,
  type SseChannelOptions,
} from '../../src/upstream/index.js';
import { startLegacyServer, type LegacyServerHandle, type LegacyServerOptions } from '../fixtures/legacy-server.js';
import { spawnFixture } from '../e2e/upstreams.js';
import { logSink, type LogSink } from './log-sink.js';
import { rawServer, reasonOf, type HasTeardown } from './raw-server.js';
import { until } from '../helpers/until.js';

const SECRET = 'Bearer sse-secret-token';
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'causeway-test', version: '0.0.0' } },
} as const;
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' } as const;

async function fixture(tt: HasTeardown, opts: LegacyServerOptions = {}): Promise<LegacyServerHandle> {
  const fx = await startLegacyServer({ transport: 'sse', ...opts });
  tt.teardown(() => fx.close());
  return fx;
}

interface Opened {
  channel: MessageChannel;
  sink: LogSink;
  messages: JsonRpcMessage[];
  closes: Array<Error | undefined>;
  response(id: number | string): Promise<JsonRpcResponse>;
}

function opener(
  tt: HasTeardown,
  url: string,
  options: Partial<SseChannelOptions> = {},
): { opener: SseChannelOpener; sink: LogSink } {
  const sink = logSink();
  const o = new SseChannelOpener({
    url,
    headers: { Authorization: SECRET },
    connectTimeoutMs: 1000,
    log: sink.log,
    ...options,
  });
  tt.teardown(() => o.close());
  return { opener: o, sink };
}

async function open(tt: HasTeardown, url: string, options: Partial<SseChannelOptions> = {}): Promise<Opened> {
  const { opener: o, sink } = opener(tt, url, options);
  const channel = await o.open();
  tt.teardown(() => channel.close());
  const messages: JsonRpcMessage[] = [];
  const closes: Array<Error | undefined> = [];
  channel.onMessage((m) => messages.push(m));
  channel.onClose((r) => closes.push(r));
  const response = async (id: number | string): Promise<JsonRpcResponse> => {
    const find = () =>
      messages.find((m) => 'id' in m && m.id === id && !('method' in m)) as JsonRpcResponse | undefined;
    return until(find, { what: `the answer to ${id}` });
  };
  return { channel, sink, messages, closes, response };
}

async function initialized(tt: HasTeardown, url: string, options: Partial<SseChannelOptions> = {}): Promise<Opened> {
  const o = await open(tt, url, options);
  await o.channel.send(INIT);
  await o.response(1);
  await o.channel.send(INITIALIZED);
  return o;
}

/** The promise rejects with an error matching `wanted` (a CausewayError's reason, its message). */
async function rejectsWith(
  tt: Test,
  p: Promise<unknown>,
  wanted: { reason?: string; message?: RegExp | string },
  msg = 'rejects as expected',
): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  tt.type(err, Error, msg);
  tt.match(err, wanted, msg);
}

function resultOf(r: JsonRpcResponse): Record<string, unknown> {
  if (!('result' in r)) throw new Error(`error response: ${JSON.stringify(r)}`);
  return r.result;
}

function textOf(r: JsonRpcResponse): string {
  const content = resultOf(r)['content'] as Array<{ text?: string }>;
  return content.map((c) => c.text ?? '').join('');
}

t.test('a session over the SDK SSE server: initialize, initialized, a tool call', async (t) => {
  const fx = await fixture(t);
  const o = await open(t, fx.url);
  t.equal(o.channel.closed, false);
  await o.channel.send(INIT);
  const init = resultOf(await o.response(1));
  t.equal(init['protocolVersion'], '2024-11-05', 'the server took our version');
  t.match(init['serverInfo'], { name: 'causeway-legacy-fixture' });
  await o.channel.send(INITIALIZED);
  await o.channel.send({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'echo', arguments: { text: 'over sse' } },
  });
  t.equal(textOf(await o.response(2)), 'over sse');
  const stats = fx.stats();
  t.equal(stats.initializeCount, 1);
  t.equal(stats.notificationsByMethod['notifications/initialized'], 1);
  t.equal(stats.lastHeaders['authorization'], SECRET, 'configured headers go on the POSTs');
  t.equal(stats.lastHeaders['content-type'], 'application/json');
  t.equal(stats.lastHeaders['mcp-protocol-version'], undefined, 'no protocol version header');
  t.equal(stats.lastHeaders['mcp-session-id'], undefined, 'no session header');
  t.equal(stats.sessionsOpen, 1);
});

t.test('over a Pool the caller owns', async (t) => {
  const fx = await fixture(t);
  const pool = new Pool(new URL(fx.url).origin, { connections: 4 });
  t.teardown(() => pool.close());
  const o = await initialized(t, fx.url, { dispatcher: pool });
  await o.channel.send({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'echo', arguments: { text: 'pooled' } },
  });
  t.equal(textOf(await o.response(2)), 'pooled');
  await o.channel.close();
  t.equal(pool.closed, false, 'the pool is left to its owner');
});

t.test("the opener's close() closes the channels it opened", async (t) => {
  const fx = await fixture(t);
  const { opener: o } = opener(t, fx.url);
  const [a, b] = await Promise.all([o.open(), o.open()]);
  const reasons: Array<Error | undefined> = [];
  a.onClose((r) => reasons.push(r));
  b.onClose((r) => reasons.push(r));
  await o.close();
  t.same(reasons, [undefined, undefined]);
  await until(() => fx.stats().sessionsOpen === 0, { what: 'the upstream to see the session go' });
});

t.test('the GET carries the configured headers and asks for an event stream', async (t) => {
  const raw = await rawServer(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`event: endpoint\ndata: /messages?sessionId=abc\n\n`);
    void req;
  });
  const o = await open(t, raw.url);
  t.equal(raw.seen[0]?.method, 'GET');
  t.equal(raw.seen[0]?.headers['accept'], 'text/event-stream');
  t.equal(raw.seen[0]?.headers['authorization'], SECRET);
  await o.channel.close();
});

t.test('two requests in flight at once are answered by id', async (t) => {
  const fx = await fixture(t);
  const o = await initialized(t, fx.url);
  await Promise.all([
    o.channel.send({
      jsonrpc: '2.0',
      id: 'slow',
      method: 'tools/call',
      params: { name: 'slow', arguments: { ms: 200 } },
    }),
    o.channel.send({
      jsonrpc: '2.0',
      id: 'fast',
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'fast' } },
    }),
  ]);
  const [slow, fast] = await Promise.all([o.response('slow'), o.response('fast')]);
  t.equal(textOf(fast), 'fast');
  t.ok(resultOf(slow)['content'], 'the slow one answered too');
  const order = o.messages
    .filter((m) => 'id' in m && (m.id === 'slow' || m.id === 'fast'))
    .map((m) => (m as JsonRpcResponse).id);
  t.same(order, ['fast', 'slow'], 'each answer came as it was ready');
});

t.test('server-sent notifications arrive: progress for a call with a progressToken', async (t) => {
  const fx = await fixture(t);
  const o = await initialized(t, fx.url);
  await o.channel.send({
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: 'tok-1' } },
  });
  t.equal(textOf(await o.response(7)), 'tok-1');
  const progress = o.messages.filter((m) => 'method' in m && m.method === 'notifications/progress');
  t.equal(progress.length, 3);
  t.match(progress[0], { params: { progressToken: 'tok-1', progress: 0, total: 100 } });
  const at = o.messages.findIndex((m) => 'id' in m && m.id === 7 && !('method' in m));
  t.ok(o.messages.indexOf(progress[2]!) < at, 'in order, before the result');
});

t.test('the upstream going away: onClose hears an error once, sends reject', async (t) => {
  const fx = await fixture(t);
  const o = await initialized(t, fx.url);
  await fx.close();
  await until(() => o.closes.length > 0, { what: 'the channel to close' });
  t.equal(o.closes.length, 1);
  t.type(o.closes[0], CausewayError);
  t.equal(reasonOf(o.closes[0]), 'upstream_unavailable');
  t.equal(o.channel.closed, true);
  await rejectsWith(t, o.channel.send({ jsonrpc: '2.0', id: 9, method: 'ping' }), { reason: 'upstream_unavailable' });
  let late: Error | undefined | 'none' = 'none';
  o.channel.onClose((r) => (late = r));
  await until(() => late !== 'none', { what: 'the late handler to hear the close' });
  t.equal(late, o.closes[0], 'a handler registered later hears the same reason');
  await o.channel.close();
  t.equal(o.closes.length, 1, 'once');
});

t.test('the upstream process killed: onClose hears an error, sends reject', async (t) => {
  const fx = await spawnFixture(0, { t, args: ['--sse'] });
  t.match(fx.url, /\/sse$/, 'the fixture names its SSE URL');
  const o = await initialized(t, fx.url);
  await fx.kill();
  await until(() => o.closes.length > 0, { what: 'the channel to close' });
  t.equal(reasonOf(o.closes[0]), 'upstream_unavailable');
  await rejectsWith(t, o.channel.send({ jsonrpc: '2.0', id: 9, method: 'ping' }), { reason: 'upstream_unavailable' });
});

t.test('close() ends the stream: the server sees the session go, onClose(undefined)', async (t) => {
  const fx = await fixture(t);
  const o = await initialized(t, fx.url);
  t.equal(fx.stats().sessionsOpen, 1);
  await o.channel.close();
  t.same(o.closes, [undefined]);
  await until(() => fx.stats().sessionsOpen === 0, { what: 'the upstream to see the session go' });
  t.equal(fx.stats().getStreamsOpen, 0);
  await rejectsWith(t, o.channel.send(INITIALIZED), { reason: 'upstream_unavailable' });
});

t.test('the server ending the session ends the channel', async (t) => {
  const fx = await fixture(t);
  const o = await initialized(t, fx.url);
  await fx.expireSessions();
  await until(() => o.channel.closed, { what: 'the channel to close' });
  t.equal(reasonOf(o.closes[0]), 'upstream_unavailable');
  await rejectsWith(t, o.channel.send(INITIALIZED), { reason: 'upstream_unavailable' });
});

t.test('a POST the server refuses rejects with a typed error; the channel goes on', async (t) => {
  let posts = 0;
  const raw = await rawServer(t, (req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: endpoint\ndata: /messages?sessionId=abc\n\n`);
      return;
    }
    posts += 1;
    res.writeHead(posts === 1 ? 500 : 202, { 'content-type': 'text/plain' });
    res.end(posts === 1 ? 'boom' : 'Accepted');
  });
  const r = await open(t, raw.url);
  const err = await r.channel.send(INITIALIZED).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.equal(reasonOf(err), 'upstream_unavailable');
  t.match((err as Error).message, /HTTP 500/);
  await r.channel.send(INITIALIZED);
  t.equal(posts, 2);
  t.equal(r.channel.closed, false);
  t.equal(raw.seen[1]?.headers['authorization'], SECRET);
  t.same(raw.seen[1]?.body, INITIALIZED);
});

/** A raw SSE upstream: GET answers with `events`; each POST is accepted, then `onPost` may write to the stream. */
async function rawSse(tt: HasTeardown, events: string, onPost?: (res: ServerResponse, stream: ServerResponse) => void) {
  let stream: ServerResponse | undefined;
  return rawServer(tt, (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET') {
      stream = res;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(events);
      return;
    }
    res.writeHead(202).end('Accepted');
    onPost?.(res, stream!);
  });
}

t.test('an endpoint that never comes: upstream_timeout within connectTimeoutMs', async (t) => {
  const raw = await rawSse(t, ': keep-alive\n\n');
  const { opener: o } = opener(t, raw.url, { connectTimeoutMs: 200 });
  const started = Date.now();
  const err = await o.open().then(
    () => undefined,
    (e: unknown) => e,
  );
  t.type(err, CausewayError);
  t.equal(reasonOf(err), 'upstream_timeout');
  // The reason says it: without the connect timer this GET would wait for ever.
  t.comment(`gave up in ${Date.now() - started} ms`);
});

t.test('a server that holds the GET without answering: upstream_timeout', async (t) => {
  const raw = await rawServer(t, () => undefined);
  const { opener: o } = opener(t, raw.url, { connectTimeoutMs: 200 });
  await rejectsWith(t, o.open(), { reason: 'upstream_timeout' });
});

t.test('nothing listening: upstream_unavailable', async (t) => {
  const { opener: o } = opener(t, `http://127.0.0.1:1/sse`, { connectTimeoutMs: 500 });
  await rejectsWith(t, o.open(), { reason: 'upstream_unavailable' });
});

t.test('the GET refused or answered with something else', async (t) => {
  const refused = await rawServer(
    t,
    (_req, res) => void res.writeHead(404, { 'content-type': 'text/plain' }).end('nope'),
  );
  await rejectsWith(t, opener(t, refused.url).opener.open(), { reason: 'upstream_unavailable', message: /HTTP 404/ });
  const redirect = await rawServer(
    t,
    (_req, res) => void res.writeHead(302, { location: 'http://127.0.0.1:1/sse' }).end(),
  );
  await rejectsWith(
    t,
    opener(t, redirect.url).opener.open(),
    { reason: 'upstream_unavailable', message: /HTTP 302/ },
    'a redirect is not followed',
  );
  const json = await rawServer(
    t,
    (_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
  );
  await rejectsWith(t, opener(t, json.url).opener.open(), { reason: 'upstream_bad_response' });
  const ended = await rawServer(
    t,
    (_req, res) => void res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: {}\n\n'),
  );
  await rejectsWith(t, opener(t, ended.url).opener.open(), {
    reason: 'upstream_bad_response',
    message: /before its endpoint/,
  });
});

t.test('an endpoint on another origin is refused', async (t) => {
  for (const endpoint of [
    'http://127.0.0.2:9/messages?sessionId=x',
    'https://127.0.0.1/messages',
    '//evil.example/messages',
  ]) {
    let posted = false;
    const raw = await rawSse(t, `event: endpoint\ndata: ${endpoint}\n\n`, () => (posted = true));
    await rejectsWith(
      t,
      opener(t, raw.url).opener.open(),
      { reason: 'upstream_bad_response', message: /another origin/ },
      endpoint,
    );
    t.notOk(posted);
  }
});

t.test('an absolute endpoint on the same origin, and a relative one resolved against the SSE URL', async (t) => {
  const paths: string[] = [];
  const raw = await rawServer(t, (req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: endpoint\ndata: ${req.url === '/mcp' ? `http://${req.headers.host}/abs?s=1` : 'rel?s=2'}\n\n`);
      return;
    }
    paths.push(req.url ?? '');
    res.writeHead(202).end('Accepted');
  });
  const a = await open(t, raw.url);
  await a.channel.send(INITIALIZED);
  const b = await open(t, raw.url.replace('/mcp', '/deep/sse'));
  await b.channel.send(INITIALIZED);
  t.same(paths, ['/abs?s=1', '/deep/rel?s=2']);
});

t.test('invalid events are dropped with a warning; the channel goes on', async (t) => {
  const raw = await rawSse(t, `event: endpoint\ndata: /messages\n\n`, (_res, stream) => {
    stream.write('event: message\ndata: {not json\n\n');
    stream.write('data: 42\n\n');
    stream.write('data: {"jsonrpc":"2.0","id":1}\n\n');
    stream.write('event: other\ndata: {"jsonrpc":"2.0","method":"x"}\n\n');
    stream.write(': keep-alive\n\n');
    stream.write('data: {"jsonrpc":"2.0","id":1,"result":{"ok":true}}\n\n');
  });
  const o = await open(t, raw.url);
  await o.channel.send(INIT);
  const r = await o.response(1);
  t.same(resultOf(r), { ok: true });
  t.equal(o.messages.length, 1, 'only the good one');
  t.equal(o.channel.closed, false);
  const warns = o.sink
    .lines()
    .filter((l) => l['level'] === 40)
    .map((l) => l['msg']);
  t.equal(warns.length, 3, `three dropped: ${JSON.stringify(warns)}`);
});

t.test('a single event above maxEventBytes ends the channel as a bad response', async (t) => {
  const raw = await rawSse(t, `event: endpoint\ndata: /messages\n\n`, (_res, stream) => {
    stream.write(`data: {"jsonrpc":"2.0","method":"big","params":{"x":"${'y'.repeat(4096)}"}}\n\n`);
  });
  const o = await open(t, raw.url, { maxEventBytes: 1024 });
  await o.channel.send(INITIALIZED);
  await until(() => o.closes.length > 0, { what: 'the channel to close' });
  t.equal(reasonOf(o.closes[0]), 'upstream_bad_response');
  t.equal(o.messages.length, 0);
  await rejectsWith(t, o.channel.send(INITIALIZED), { reason: 'upstream_unavailable' });
});

t.test('messages sent before onMessage is called are kept for it', async (t) => {
  // The event of another type after the message is logged once read: proof the message came first.
  const raw = await rawSse(
    t,
    `event: endpoint\ndata: /messages\n\ndata: ` +
      `{"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\nevent: marker\ndata: x\n\n`,
  );
  const { opener: o, sink } = opener(t, raw.url);
  const channel = await o.open();
  t.teardown(() => channel.close());
  await until(() => sink.lines().some((l) => l['msg'] === 'upstream SSE event of another type ignored'), {
    what: 'the marker event to be read',
  });
  const got: JsonRpcMessage[] = [];
  channel.onMessage((m) => got.push(m));
  t.equal(got.length, 1);
});

t.test('open() honours its abort signal', async (t) => {
  const raw = await rawServer(t, () => undefined);
  const { opener: o } = opener(t, raw.url, { connectTimeoutMs: 5000 });
  const ac = new AbortController();
  const p = o.open(ac.signal);
  setTimeout(() => ac.abort(new Error('caller gave up')), 50);
  await rejectsWith(t, p, { message: 'caller gave up' });
});

t.test('detectTransport', async (t) => {
  t.test('the Streamable HTTP fixture', async (t) => {
    const fx = await startLegacyServer();
    t.teardown(() => fx.close());
    const sink = logSink();
    const memo = new TransportMemo();
    t.same(
      await detectTransport(fx.url, { memo, log: sink.log, timeoutMs: 2000, headers: { Authorization: SECRET } }),
      { transport: 'streamable-http', url: fx.url },
    );
    t.equal(fx.stats().initializeCount, 1);
    t.equal(fx.stats().lastHeaders['authorization'], SECRET);
    await until(() => fx.stats().sessionsOpen === 0, { what: 'the upstream to see the session go' });
    t.pass('the probe session was ended');
    t.equal((await detectTransport(fx.url, { memo, log: sink.log, timeoutMs: 2000 })).transport, 'streamable-http');
    t.equal(fx.stats().initializeCount, 1, 'memo: no second probe');
    t.equal(sink.lines().filter((l) => l['msg'] === 'upstream transport detected').length, 1, 'logged once');
  });

  t.test('the SSE fixture, at its SSE URL', async (t) => {
    const fx = await fixture(t);
    const sink = logSink();
    const memo = new TransportMemo();
    const [a, b] = await Promise.all([
      detectTransport(fx.url, { memo, log: sink.log, timeoutMs: 2000 }),
      detectTransport(fx.url, { memo, log: sink.log, timeoutMs: 2000 }),
    ]);
    t.same(a, { transport: 'sse', url: fx.url });
    t.equal(b, a);
    t.equal(fx.stats().getStreamsOpened, 1, 'concurrent callers share one probe');
    t.equal((await detectTransport(fx.url, { memo, log: sink.log, timeoutMs: 2000 })).transport, 'sse');
    t.equal(fx.stats().getStreamsOpened, 1, 'memo: no second probe');
    await until(() => fx.stats().sessionsOpen === 0, { what: 'the upstream to see the session go' });
    t.pass('the probe stream was closed');
  });

  t.test('a modern-style 404 with a JSON-RPC body is Streamable HTTP, no GET', async (t) => {
    const raw = await rawServer(t, (_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32601, message: 'Method not found' } }));
    });
    t.equal(
      (await detectTransport(raw.url, { memo: new TransportMemo(), log: logSink().log, timeoutMs: 1000 })).transport,
      'streamable-http',
    );
    t.same(
      raw.seen.map((s) => s.method),
      ['POST'],
    );
  });

  t.test('a /mcp URL whose server only speaks HTTP+SSE: found at the conventional /sse beside it', async (t) => {
    const fx = await fixture(t);
    const base = fx.url.replace('/sse', '/mcp');
    t.same(await detectTransport(base, { memo: new TransportMemo(), log: logSink().log, timeoutMs: 1000 }), {
      transport: 'sse',
      url: fx.url,
    });
  });

  t.test('neither: the probe fails and nothing is remembered', async (t) => {
    const raw = await rawServer(t, (_req, res) => void res.writeHead(405, { 'content-type': 'text/plain' }).end('no'));
    const memo = new TransportMemo();
    await rejectsWith(t, detectTransport(raw.url, { memo, log: logSink().log, timeoutMs: 1000 }), {
      reason: 'upstream_unavailable',
    });
    t.equal(memo.get(raw.url), undefined);
    t.same(
      raw.seen.map((s) => s.method),
      ['POST', 'GET', 'GET'],
      'the URL, then the conventional /sse beside it',
    );
    const down = await rawServer(t, (_req, res) => void res.writeHead(503).end());
    await rejectsWith(t, detectTransport(down.url, { memo, log: logSink().log, timeoutMs: 1000 }), {
      reason: 'upstream_unavailable',
      message: /HTTP 503/,
    });
  });
});
