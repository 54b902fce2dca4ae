// The warm lane: a modern call on a session Causeway holds open is sent and answered on one
// straight path (src/warm/), and must answer exactly as the pipeline does, whatever the upstream
// does meanwhile: JSON or SSE answers, asks that become input_required rounds, a stream closed
// mid-call, a client that goes away, an upstream past its timeout, a session the upstream lost,
// and its in-band errors. Every upstream is the SDK 1.32.2 fixture. Which path served a request is
// read from the access log (`warm`).

import t, { type Test } from 'tap';
import { startLegacyServer, type LegacyServerOptions } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { sseMessages } from '../helpers/sse.js';
import { until } from '../helpers/until.js';
import { event, json, rawServer, startSse } from '../upstream/raw-server.js';
import { send, toolCall, type JsonObject, type WireResponse } from './wire.js';

const CAPS = { elicitation: { form: {} } };

async function stack(t: Test, upstreamOpts: LegacyServerOptions = {}, settings: Record<string, string | number> = {}) {
  const upstream = await startLegacyServer(upstreamOpts);
  const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.accessSample': 1, ...settings });
  t.teardown(async () => {
    await causeway.close();
    await upstream.close();
  });
  /** The access log lines of tools/call, in order. */
  const served = () =>
    causeway.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request' && l.method === 'tools/call');
  return { upstream, causeway, served };
}

let nextId = 1;
function call(
  url: string,
  name: string,
  args: JsonObject = {},
  meta: JsonObject = { 'io.modelcontextprotocol/clientCapabilities': CAPS },
  extra: JsonObject = {},
) {
  const { body, headers } = toolCall(name, args, nextId++, meta);
  Object.assign(body.params as JsonObject, extra);
  return send(url, { body, headers });
}

/** The one JSON-RPC message of a reply (JSON, or the last SSE event). */
function message(r: WireResponse): Record<string, any> {
  if (r.json !== undefined) return r.json as Record<string, any>;
  const all = sseMessages(r.text) as Array<Record<string, any>>;
  return all[all.length - 1]!;
}

/** The answer without its id: what the pipeline and the lane must agree on. */
function answerOf(r: WireResponse): { status: number } & Record<string, unknown> {
  const { id: _id, ...rest } = message(r);
  return { status: r.status, ...rest };
}

for (const jsonResponse of [false, true]) {
  t.test(
    `a warm call takes the straight path and answers as the ` +
      `pipeline does (${jsonResponse ? 'JSON' : 'SSE'} answers)`,
    async (t) => {
      const { upstream, causeway, served } = await stack(t, { jsonResponse });
      const first = await call(causeway.url, 'echo', { text: 'hello' });
      const second = await call(causeway.url, 'echo', { text: 'hello' });
      t.same(answerOf(second), answerOf(first), 'the same answer on either path');
      t.equal(message(second).result.content[0].text, 'hello');
      t.equal(message(second).result.resultType, 'complete');
      // An in-band error of the upstream's: an unknown tool, on either path.
      const unknownFirst = await call(causeway.url, 'no_such_tool', {});
      const lines = served();
      t.equal(lines[0]?.warm, undefined, 'the first call reads the tools: the pipeline');
      t.equal(lines[1]?.warm, true, 'the second call: the warm lane');
      t.equal(lines[2]?.warm, true, 'an unknown tool of a session whose tools are read: the warm lane');
      t.same(answerOf(unknownFirst).status, 200);
      t.ok(
        message(unknownFirst).error ?? message(unknownFirst).result?.isError,
        'the upstream refused the unknown tool',
      );
      t.equal(upstream.stats().initializeCount, 1, 'one upstream session');
      const metrics = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
      t.match(
        metrics,
        /causeway_modern_requests_total\{[^}]*method="tools\/call"[^}]*name="echo"[^}]*result_type="complete"[^}]*\} 2/,
        'both calls counted as answered',
      );
      t.match(
        metrics,
        /causeway_upstream_request_duration_seconds_count\{[^}]*method="tools\/call"[^}]*result="ok"[^}]*\} [2-9]/,
        "the lane's upstream request is timed as the pipeline's",
      );
    },
  );
}

t.test('a warm call that asks the client: an input_required round, and its retry completes it', async (t) => {
  const { upstream, causeway, served } = await stack(t);
  await call(causeway.url, 'echo', { text: 'warm up' });
  const round = message(await call(causeway.url, 'test_input_required_result_elicitation'));
  t.equal(served()[1]?.warm, true, 'the call went the warm lane');
  t.equal(round.result?.resultType, 'input_required');
  const [key] = Object.keys(round.result.inputRequests as object);
  t.ok(key, 'one question');
  const done = message(
    await call(
      causeway.url,
      'test_input_required_result_elicitation',
      {},
      { 'io.modelcontextprotocol/clientCapabilities': CAPS },
      {
        inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } },
        requestState: round.result.requestState,
      },
    ),
  );
  t.equal(done.result?.content?.[0]?.text, 'Hello, Ada!', 'the held call answered the retry');
  t.equal(upstream.stats().toolCalls['test_input_required_result_elicitation'], 1, 'the upstream ran the tool once');
  // A client that declared no elicitation: the upstream's ask is refused, the call fails as on the pipeline.
  const refused = message(
    await call(
      causeway.url,
      'test_input_required_result_elicitation',
      {},
      { 'io.modelcontextprotocol/clientCapabilities': {} },
    ),
  );
  t.equal(refused.error?.code, -32021, 'missing_client_capability');
});

t.test('a stream the upstream closes mid-call is followed after its last event id', async (t) => {
  const { causeway, served } = await stack(t, { retryMs: 50 });
  await call(causeway.url, 'echo', { text: 'warm up' });
  const r = message(await call(causeway.url, 'test_reconnection'));
  t.equal(served()[1]?.warm, true, 'the warm lane');
  t.match(r.result?.content?.[0]?.text, /properly reconnected/);
});

t.test('a client that goes away has its warm call cancelled upstream', async (t) => {
  const { upstream, causeway, served } = await stack(t);
  await call(causeway.url, 'echo', { text: 'warm up' });
  const { body, headers } = toolCall('slow', { ms: 60_000 }, nextId++, {
    'io.modelcontextprotocol/clientCapabilities': CAPS,
  });
  const abort = new AbortController();
  const going = fetch(causeway.url, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: abort.signal,
  }).catch(() => 'aborted');
  await until(() => upstream.stats().toolCalls['slow'] === 1, { what: 'the slow call running upstream' });
  abort.abort();
  t.equal(await going, 'aborted');
  await until(() => upstream.stats().cancelled >= 1, { what: 'notifications/cancelled at the upstream' });
  await until(() => upstream.stats().toolCallsEnded['slow'] === 1, { what: 'the slow tool stopped' });
  const line = await until(() => served().find((l) => l.name === 'slow'), { what: 'the access log line' });
  t.equal(line.warm, true, 'the warm lane');
  t.equal(line.resultType, 'error');
});

t.test("a warm call past the upstream's timeout: upstream_timeout, and the call cancelled upstream", async (t) => {
  const { upstream, causeway, served } = await stack(t, {}, { 'upstream.requestTimeoutMs': 500 });
  await call(causeway.url, 'echo', { text: 'warm up' });
  const r = await call(causeway.url, 'slow', { ms: 60_000 });
  t.equal(r.status, 504);
  t.equal(message(r).error?.code, -32603);
  t.equal(served()[1]?.warm, true, 'the warm lane');
  await until(() => upstream.stats().cancelled >= 1, { what: 'notifications/cancelled at the upstream' });
});

t.test('a session the upstream lost: the request goes back to the pipeline, which opens a new one', async (t) => {
  const { upstream, causeway, served } = await stack(t);
  await call(causeway.url, 'echo', { text: 'warm up' });
  t.equal(message(await call(causeway.url, 'counter')).result?.content?.[0]?.text, '1');
  t.equal(message(await call(causeway.url, 'counter')).result?.content?.[0]?.text, '2', 'warm: the same session');
  t.same(
    served().map((l) => l.warm),
    [undefined, true, true],
  );
  t.ok((await upstream.expireSessions()) >= 1);
  const r = message(await call(causeway.url, 'counter'));
  t.equal(r.result?.content?.[0]?.text, '1', 'answered on a new session');
  t.equal(upstream.stats().initializeCount, 2);
  t.equal(served()[3]?.warm, undefined, 'served by the pipeline, which replaced the session');
  t.equal(
    upstream.stats().toolCalls['counter'],
    3,
    'the lost request never ran upstream; the tool ran once per answer',
  );
});

/**
 * An upstream that misbehaves on purpose (raw node:http, for what the SDK will not do): each tool
 * answers its call one wrong way. The same call is served once by the pipeline (a progress token
 * with a JSON-only Accept keeps it off the lane) and once by the warm lane: the client must get
 * the same status and error either way.
 */
t.test('what a misbehaving upstream answers reaches the client the same on either path', async (t) => {
  const tools = [
    'fail_500',
    'refuse_400',
    'too_large',
    'plain_text',
    'accepted_202',
    'sse_unanswered',
    'sse_batch',
    'era_refused',
  ];
  const upstream = await rawServer(t, (req, res, body) => {
    const msg = body as { id?: number | string; method?: string; params?: { name?: string } } | undefined;
    if (msg?.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'raw-session-1' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: msg.id,
          result: {
            protocolVersion: '2025-11-25',
            capabilities: { tools: {} },
            serverInfo: { name: 'raw', version: '1' },
          },
        }),
      );
      return;
    }
    if (msg?.id === undefined || req.method !== 'POST')
      return void res.writeHead(req.method === 'GET' ? 405 : 202).end();
    // As the SDK's server answers a request outside a session (Causeway's era probe among them).
    if (req.headers['mcp-session-id'] === undefined)
      return json(res, 400, {
        jsonrpc: '2.0',
        id: msg.id,
        error: { code: -32000, message: 'Bad Request: No valid session ID provided' },
      });
    if (msg.method === 'tools/list')
      return json(res, 200, {
        jsonrpc: '2.0',
        id: msg.id,
        result: { tools: tools.map((name) => ({ name, inputSchema: { type: 'object' } })) },
      });
    if (msg.method !== 'tools/call')
      return json(res, 200, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    switch (msg.params?.name) {
      case 'fail_500':
        return json(res, 500, { jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: 'the server broke' } });
      case 'refuse_400':
        return json(res, 400, { jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'bad arguments' } });
      case 'too_large':
        return json(res, 200, {
          jsonrpc: '2.0',
          id: msg.id,
          result: { content: [{ type: 'text', text: 'x'.repeat(5000) }] },
        });
      case 'plain_text':
        res.writeHead(200, { 'content-type': 'text/plain' });
        return void res.end('hello');
      case 'accepted_202':
        return void res.writeHead(202).end();
      case 'sse_unanswered':
        startSse(res);
        res.write(
          event({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }),
        );
        return void res.end();
      case 'era_refused':
        // As a server upgraded in place to 2026-07-28 refuses a legacy request: nothing was run.
        return json(res, 400, {
          jsonrpc: '2.0',
          id: msg.id,
          error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'] } },
        });
      case 'sse_batch':
        startSse(res);
        res.write(
          event([
            { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } },
            { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'batched' }] } },
          ]),
        );
        return void res.end();
      default:
        return json(res, 200, { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'ok' }] } });
    }
  });
  const causeway = await startCauseway({
    'upstream.url': upstream.url,
    'log.accessSample': 1,
    'upstream.maxResponseBytes': 2048,
  });
  t.teardown(() => causeway.close());
  const lines = () =>
    causeway.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request' && l.method === 'tools/call');
  // The session's tools are read once (an argument value): from then on a call may take the lane.
  await call(causeway.url, 'warm_up', { value: 'x' });
  for (const name of tools) {
    const { body, headers } = toolCall(name, {}, nextId++, {
      'io.modelcontextprotocol/clientCapabilities': CAPS,
      progressToken: `p-${name}`,
    });
    const viaPipeline = await send(causeway.url, { body, headers: { ...headers, accept: 'application/json' } });
    const viaLane = await call(causeway.url, name);
    // Access lines are written as each response closes, just after the client has it.
    const both = await until(
      () => {
        const l = lines().filter((x) => x.name === name);
        return l.length === 2 && l;
      },
      { what: `the access lines of ${name}` },
    );
    if (name === 'era_refused')
      t.same(
        both.map((l) => l.warm),
        [undefined, undefined],
        `${name}: the warm lane hands the request back to the pipeline`,
      );
    else
      t.same(both.map((l) => l.warm).sort(), [true, undefined], `${name}: once by the pipeline, once by the warm lane`);
    const { id: _a, ...pipelineAnswer } = viaPipeline.json as Record<string, unknown>;
    const { id: _b, ...laneAnswer } = message(viaLane);
    t.same(
      { status: viaLane.status, ...laneAnswer },
      { status: viaPipeline.status, ...pipelineAnswer },
      `${name}: the same answer (${viaLane.status})`,
    );
  }
  // A client that can be asked brings Causeway's own scout session (subscriptions/standing.ts), apart.
  const initializes = upstream.seen.filter((s) => (s.body as { method?: string } | undefined)?.method === 'initialize');
  const scout = (s: (typeof initializes)[number]) =>
    (s.body as { params?: { clientInfo?: { name?: string } } }).params?.clientInfo?.name === 'causeway scout';
  t.equal(initializes.filter((s) => !scout(s)).length, 1, 'one upstream session throughout');
});

t.test(
  'a held warm call whose stream the upstream closes is ' +
    'followed after its last event id, and its retry completes it',
  async (t) => {
    let asked:
      | { id: number | string; res: import('node:http').ServerResponse | undefined; answer: unknown }
      | undefined;
    let resumedFrom: string | undefined;
    const upstream = await rawServer(t, (req, res, body) => {
      const msg = body as
        | { id?: number | string; method?: string; result?: unknown; params?: { name?: string } }
        | undefined;
      if (req.method === 'GET') {
        // The call's stream taken up again: its result follows once the client's answer came.
        resumedFrom = req.headers['last-event-id'] as string | undefined;
        if (resumedFrom !== 'e1' || asked === undefined) return void res.writeHead(405).end();
        startSse(res);
        asked.res = res;
        if (asked.answer !== undefined)
          res.end(
            event(
              {
                jsonrpc: '2.0',
                id: asked.id,
                result: { content: [{ type: 'text', text: `resumed: ${JSON.stringify(asked.answer)}` }] },
              },
              { id: 'e2' },
            ),
          );
        return;
      }
      if (msg?.method === 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'raw-session-2' });
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: msg.id,
            result: {
              protocolVersion: '2025-11-25',
              capabilities: { tools: {} },
              serverInfo: { name: 'raw', version: '1' },
            },
          }),
        );
        return;
      }
      if (msg?.method === undefined && msg?.result !== undefined && asked) {
        // The client's answer to the ask, relayed by Causeway.
        asked.answer = msg.result;
        res.writeHead(202).end();
        if (asked.res)
          asked.res.end(
            event(
              {
                jsonrpc: '2.0',
                id: asked.id,
                result: { content: [{ type: 'text', text: `resumed: ${JSON.stringify(asked.answer)}` }] },
              },
              { id: 'e2' },
            ),
          );
        return;
      }
      if (msg?.id === undefined) return void res.writeHead(202).end();
      if (req.headers['mcp-session-id'] === undefined)
        return json(res, 400, {
          jsonrpc: '2.0',
          id: msg.id,
          error: { code: -32000, message: 'Bad Request: No valid session ID provided' },
        });
      if (msg.method === 'tools/list')
        return json(res, 200, {
          jsonrpc: '2.0',
          id: msg.id,
          result: { tools: [{ name: 'ask_then_drop', inputSchema: { type: 'object' } }] },
        });
      if (msg.method !== 'tools/call')
        return json(res, 200, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
      if (msg.params?.name !== 'ask_then_drop')
        return json(res, 200, { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'ok' }] } });
      // Asks, then closes the stream after the ask's event (SEP-1699): the answer is to come on a GET.
      asked = { id: msg.id, res: undefined, answer: undefined };
      startSse(res);
      const ask = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
      res.end(
        event(
          {
            jsonrpc: '2.0',
            id: 'ask-1',
            method: 'elicitation/create',
            params: { message: 'Your name?', requestedSchema: ask },
          },
          { id: 'e1', retry: 20 },
        ),
      );
    });
    const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.accessSample': 1 });
    t.teardown(() => causeway.close());
    await call(causeway.url, 'warm_up', { value: 'x' });
    const round = message(await call(causeway.url, 'ask_then_drop'));
    t.equal(round.result?.resultType, 'input_required', 'the ask became a round');
    await until(() => resumedFrom === 'e1', { what: 'the stream taken up after event e1' });
    const line = await until(
      () =>
        causeway.logs
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.msg === 'request' && l.name === 'ask_then_drop'),
      { what: 'the access line' },
    );
    t.equal(line.warm, true, 'the warm lane sent it');
    const [key] = Object.keys(round.result.inputRequests as object);
    const done = message(
      await call(
        causeway.url,
        'ask_then_drop',
        {},
        { 'io.modelcontextprotocol/clientCapabilities': CAPS },
        {
          inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } },
          requestState: round.result.requestState,
        },
      ),
    );
    t.equal(
      done.result?.content?.[0]?.text,
      'resumed: {"action":"accept","content":{"name":"Ada"}}',
      'the answer went upstream and the result came on the followed stream',
    );
    t.equal(
      upstream.seen.filter(
        (s) => (s.body as { params?: { name?: string } } | undefined)?.params?.name === 'ask_then_drop',
      ).length,
      1,
      'the call was sent once',
    );
  },
);
