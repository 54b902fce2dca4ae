// Traces across Causeway, all real parts: a client request carrying a traceparent, Causeway as a
// process of the built bin exporting over OTLP/HTTP to a receiver of the test's own, and the
// legacy fixture recording the trace context each request reached it with. One trace id from the
// client's span through Causeway's server and client spans to the upstream. With tracing off the
// receiver hears nothing and the client's own context still reaches the upstream. With
// OpenTelemetry metrics asked for, mcp.server.operation.duration reaches the receiver too.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { callTool, ELICIT, nameAnswer, textOf } from '../mrtr/wire.js';
import { modernBody, modernHeaders, post, toolCall } from './wire.js';

const SERVER = 2;
const CLIENT = 3;

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());

const traceparent = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`;

t.test('one trace from the client through Causeway to the upstream, exported when Causeway drains', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const c = await spawnCauseway(
    { 'upstream.url': upstream.url },
    {
      t,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: 'causeway-traces',
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
        // Nothing is exported on a timer during the test: every span comes from the drain's flush.
        OTEL_BSP_SCHEDULE_DELAY: '600000',
      },
    },
  );

  const header = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
  const a = toolCall('echo', { text: 'traced' }, 1);
  const resA = await post(c.url, a.body, { ...a.headers, traceparent: traceparent(header.traceId, header.spanId) });
  t.equal(resA.status, 200, 'the call with a traceparent header is answered');

  const meta = { traceId: '5cf92f3577b34da6a3ce929d0e0e4737', spanId: '11f067aa0ba902b8' };
  const b = toolCall('echo', { text: 'traced in _meta' }, 2, { traceparent: traceparent(meta.traceId, meta.spanId) });
  const resB = await post(c.url, b.body, b.headers);
  t.equal(resB.status, 200, 'the call with params._meta.traceparent only is answered');
  const failing = { traceId: '7ef92f3577b34da6a3ce929d0e0e4739', spanId: '33f067aa0ba902ba' };
  const f = modernBody('prompts/get', { name: 'no_such_prompt' }, 3);
  const resF = await post(c.url, f, {
    ...modernHeaders('prompts/get', 'no_such_prompt'),
    traceparent: traceparent(failing.traceId, failing.spanId),
  });
  t.equal(resF.json?.error?.code, -32602, 'the upstream refuses an unknown prompt');
  const round1 = { traceId: '9bf92f3577b34da6a3ce929d0e0e4741', spanId: '55f067aa0ba902bc' };
  const round2 = { traceId: 'acf92f3577b34da6a3ce929d0e0e4742', spanId: '66f067aa0ba902bd' };
  const asked = await callTool(
    c.url,
    ELICIT,
    {},
    { headers: { traceparent: traceparent(round1.traceId, round1.spanId) } },
  );
  t.equal(asked.body.result?.resultType, 'input_required', 'the multi-round call asks the client');
  const answered = await callTool(
    c.url,
    ELICIT,
    { inputResponses: { user_name: nameAnswer('Ada') }, requestState: asked.body.result?.requestState },
    { headers: { traceparent: traceparent(round2.traceId, round2.spanId) } },
  );
  t.equal(textOf(answered), 'Hello, Ada!', 'the retry completes the call');
  const sessionId = upstream.stats().lastHeaders['mcp-session-id'];
  t.ok(sessionId, 'the upstream session has an id (it must appear in no span)');

  t.equal(receiver.requests.length, 0, 'nothing exported before the drain');
  await c.close();
  t.ok(receiver.requests.length > 0, 'the drain exported the spans before the process exited');
  t.ok(
    receiver.requests.every((r) => r.path === '/v1/traces' && r.contentType === 'application/json'),
    'exports are OTLP/HTTP JSON to /v1/traces',
  );
  const spans = receiver.spans;
  t.ok(
    spans.every((s) => s.service === 'causeway-traces'),
    'service.name is OTEL_SERVICE_NAME',
  );

  const seen = upstream.stats().traceparents;
  const inTrace = (id: string) => spans.filter((s) => s.traceId === id);

  t.test('parent from the traceparent header', async (t) => {
    const trace = inTrace(header.traceId);
    const server = trace.find((s) => s.kind === SERVER);
    t.ok(server, 'a server span in the client trace');
    if (!server) return;
    t.equal(server.parentSpanId, header.spanId, "its parent is the client's span");
    t.equal(server.name, 'tools/call echo');
    t.match(server.attributes, {
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'echo',
      'gen_ai.operation.name': 'execute_tool',
      'mcp.protocol.version': '2026-07-28',
      'jsonrpc.request.id': '1',
    });
    t.notOk('error.type' in server.attributes, 'a call that succeeded has no error.type');

    const call = trace.find((s) => s.kind === CLIENT && s.name === 'tools/call echo');
    t.ok(call, 'a client span for the upstream exchange');
    if (!call) return;
    t.equal(call.parentSpanId, server.spanId, 'child of the server span');
    t.equal(call.attributes['mcp.method.name'], 'tools/call');
    t.equal(call.attributes['gen_ai.tool.name'], 'echo');

    const acquire = trace.find((s) => s.name === 'causeway.pool.acquire');
    const init = trace.find((s) => s.name === 'initialize');
    t.ok(acquire && init, 'the cold call opened the upstream session inside the trace');
    t.equal(acquire?.parentSpanId, server.spanId, 'pool acquire is a child of the server span');
    t.equal(init?.parentSpanId, acquire?.spanId, 'initialize is a child of the acquire');
    t.equal(init?.kind, CLIENT);

    const got = seen.find((s) => s.method === 'tools/call' && s.header?.includes(header.traceId));
    t.ok(got, 'the upstream got the trace on its tools/call');
    t.equal(
      got?.header,
      traceparent(header.traceId, call.spanId),
      "its traceparent header names Causeway's client span",
    );
    t.equal(got?.meta, traceparent(header.traceId, call.spanId), 'and so does params._meta.traceparent');
    const initSeen = seen.find((s) => s.method === 'initialize');
    t.equal(
      initSeen?.header,
      init ? traceparent(header.traceId, init.spanId) : undefined,
      "the upstream initialize carries the initialize span's context",
    );
  });

  t.test('parent from params._meta.traceparent when there is no header', async (t) => {
    const trace = inTrace(meta.traceId);
    const server = trace.find((s) => s.kind === SERVER);
    t.equal(server?.parentSpanId, meta.spanId, "the server span's parent is the one in _meta");
    t.equal(server?.attributes['jsonrpc.request.id'], '2');
    const call = trace.find((s) => s.kind === CLIENT);
    t.equal(call?.parentSpanId, server?.spanId, 'the client span is its child');
    t.notOk(
      trace.some((s) => s.name === 'initialize'),
      'the warm call opened no session',
    );
    const got = seen.find((s) => s.method === 'tools/call' && s.meta?.includes(meta.traceId));
    t.equal(
      got?.meta,
      call ? traceparent(meta.traceId, call.spanId) : undefined,
      "the upstream's _meta.traceparent names the client span, not the client's",
    );
    t.equal(got?.header, got?.meta, 'the upstream got the same context as a header, which the client never sent');
  });

  t.test("an upstream's JSON-RPC error: error.type on both spans", async (t) => {
    const trace = inTrace(failing.traceId);
    const server = trace.find((s) => s.kind === SERVER);
    t.equal(server?.name, 'prompts/get no_such_prompt', 'named after the prompt');
    t.equal(server?.attributes['gen_ai.prompt.name'], 'no_such_prompt');
    t.equal(server?.attributes['error.type'], '-32602', 'error.type is the JSON-RPC code the client got');
    t.equal(server?.attributes['rpc.response.status_code'], '-32602');
    t.equal(server?.status, 2, 'the span status is error');
    const call = trace.find((s) => s.kind === CLIENT);
    t.ok(call?.attributes['error.type'], "the client span carries the upstream's code");
    t.equal(call?.status, 2);
  });

  t.test("a multi-round call's next round links to the round before it", async (t) => {
    const first = inTrace(round1.traceId).find((s) => s.kind === SERVER);
    const second = inTrace(round2.traceId).find((s) => s.kind === SERVER);
    t.equal(first?.parentSpanId, round1.spanId, "round 1 is a server span in its client's trace");
    t.equal(second?.parentSpanId, round2.spanId, "the retry is a server span in the retry's trace");
    t.match(
      second?.links,
      [{ traceId: round1.traceId, spanId: first?.spanId, attributes: { 'causeway.link': 'previous_round' } }],
      'linked to round 1',
    );
    const held = inTrace(round1.traceId).find((s) => s.kind === CLIENT && s.name === `tools/call ${ELICIT}`);
    t.equal(held?.parentSpanId, first?.spanId, 'the upstream call held across the rounds is a child of round 1');
  });

  t.test('no session id and no token in any span', async (t) => {
    const everything = JSON.stringify(spans.map((s: ReceivedSpan) => s.attributes));
    t.notOk(
      spans.some((s) => 'mcp.session.id' in s.attributes),
      'mcp.session.id is never set',
    );
    t.notOk(everything.includes(String(sessionId)), 'the upstream session id appears in no attribute');
  });
});

t.test('with the Redis store, the commands a request needs are client spans under it', async (t) => {
  const redis = await startRedis(t);
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const c = await spawnCauseway(
    {
      'upstream.url': upstream.url,
      'upstream.name': 'redis-traced',
      'store.kind': 'redis',
      'store.redisUrl': redis.url,
      'mrtr.stateKeys': randomBytes(32).toString('base64'),
    },
    { t, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '600000' } },
  );
  const ids = { traceId: '8af92f3577b34da6a3ce929d0e0e4740', spanId: '44f067aa0ba902bb' };
  const call = toolCall('echo', { text: 'shared' }, 4);
  const res = await post(c.url, call.body, { ...call.headers, traceparent: traceparent(ids.traceId, ids.spanId) });
  t.equal(res.status, 200);
  await c.close();
  t.ok(
    receiver.spans.length > 0 && receiver.spans.every((s) => s.service === 'causeway'),
    'without OTEL_SERVICE_NAME the service is causeway',
  );
  const trace = receiver.spans.filter((s) => s.traceId === ids.traceId);
  const acquire = trace.find((s) => s.name === 'causeway.pool.acquire');
  const store = trace.filter((s) => s.name.startsWith('causeway.store.'));
  t.ok(store.length > 0, `store spans: ${store.map((s) => s.name).join(', ')}`);
  t.ok(
    store.every((s) => s.kind === CLIENT && s.attributes['db.system.name'] === 'redis'),
    'client spans of the redis system',
  );
  t.ok(
    store.some((s) => s.parentSpanId === acquire?.spanId),
    'the cold acquire reads the store',
  );
  t.notOk(
    receiver.spans.some((s) => s.name.startsWith('causeway.store.') && s.traceId !== ids.traceId),
    "the store's background commands make no traces of their own",
  );
});

t.test('a round handed to the replica holding the call is traced there, under the retry', async (t) => {
  const redis = await startRedis(t);
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const settings = {
    'upstream.url': upstream.url,
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
  };
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '600000' };
  const [a, b] = await Promise.all([spawnCauseway(settings, { t, env }), spawnCauseway(settings, { t, env })]);
  const tool = 'test_input_required_result_multi_round';
  const ids = [
    'bdf92f3577b34da6a3ce929d0e0e4743',
    'cef92f3577b34da6a3ce929d0e0e4744',
    'dff92f3577b34da6a3ce929d0e0e4745',
  ];
  const on = (i: number) => ({ headers: { traceparent: traceparent(ids[i]!, '77f067aa0ba902be') } });
  const r1 = await callTool(a.url, tool, {}, on(0));
  t.equal(r1.body.result?.resultType, 'input_required', 'round 1 on A');
  const r2 = await callTool(
    b.url,
    tool,
    {
      inputResponses: { step1: { action: 'accept', content: { name: 'Alice' } } },
      requestState: r1.body.result?.requestState,
    },
    on(1),
  );
  t.equal(r2.body.result?.resultType, 'input_required', 'round 2 through B, handed to A');
  const r3 = await callTool(
    a.url,
    tool,
    {
      inputResponses: { step2: { action: 'accept', content: { color: 'blue' } } },
      requestState: r2.body.result?.requestState,
    },
    on(2),
  );
  t.notOk(r3.body.error, 'round 3 on A completes the call');
  await Promise.all([a.close(), b.close()]);

  const server = (i: number) => receiver.spans.find((s) => s.traceId === ids[i] && s.kind === SERVER);
  const [s1, s2, s3] = [server(0), server(1), server(2)];
  t.match(s2?.links, [{ traceId: ids[0], spanId: s1?.spanId }], "B's retry links to round 1 on A");
  const handed = receiver.spans.find((s) => s.name === 'causeway.mrtr.handed_round');
  t.equal(handed?.traceId, ids[1], "A's work for the handed round is in the retry's trace");
  t.equal(handed?.parentSpanId, s2?.spanId, "under B's server span");
  t.match(s3?.links, [{ traceId: ids[1], spanId: handed?.spanId }], 'round 3 links to the round A served for B');
});

t.test('tracing off: nothing reaches the receiver, and the client context still goes upstream unchanged', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  // The endpoint is set, but OTEL_TRACES_EXPORTER=none turns tracing off.
  const c = await spawnCauseway(
    { 'upstream.url': upstream.url },
    {
      t,
      env: { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '10' },
    },
  );
  const client = traceparent('6df92f3577b34da6a3ce929d0e0e4738', '22f067aa0ba902b9');
  const call = toolCall('echo', { text: 'untraced' }, 3, { traceparent: client });
  const res = await post(c.url, call.body, { ...call.headers, traceparent: client });
  t.equal(res.status, 200);
  await c.close();
  t.same(receiver.requests, [], 'no export request reached the receiver');
  const got = upstream.stats().traceparents.find((s) => s.method === 'tools/call' && s.meta === client);
  t.equal(got?.header, client, "the client's traceparent header is forwarded as it was");
  t.equal(got?.meta, client, 'and its _meta.traceparent too');
});

t.test('OpenTelemetry metrics asked for: mcp.server.operation.duration after the MCP conventions', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const c = await spawnCauseway(
    { 'upstream.url': upstream.url, 'upstream.name': 'metered' },
    {
      t,
      env: {
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_TRACES_EXPORTER: 'none',
        OTEL_METRIC_EXPORT_INTERVAL: '600000',
      },
    },
  );
  await post(c.url, modernBody('tools/list', {}), modernHeaders('tools/list'));
  for (let i = 0; i < 2; i++) {
    const call = toolCall('echo', { text: 'metered' }, 10 + i);
    t.equal((await post(c.url, call.body, call.headers)).status, 200);
  }
  const unknown = toolCall('no_such_tool', {}, 20);
  await post(c.url, unknown.body, unknown.headers);
  await c.close();
  t.ok(
    receiver.requests.every((r) => r.path === '/v1/metrics'),
    'metrics only: traces were turned off',
  );
  const points = receiver.histograms.filter((p) => p.metric === 'mcp.server.operation.duration');
  t.ok(points.length > 0, 'the drain exported the histogram');
  t.ok(
    points.every((p) => p.unit === 's' && p.service === 'causeway'),
    'in seconds, from causeway',
  );
  const echo = points.find((p) => p.attributes['gen_ai.tool.name'] === 'echo');
  t.match(echo?.attributes, {
    'mcp.method.name': 'tools/call',
    'mcp.protocol.version': '2026-07-28',
    'causeway.upstream': 'metered',
  });
  t.equal(echo?.count, 2, 'both echo calls');
  t.notOk(echo && 'error.type' in echo.attributes, 'no error on a success');
  t.ok(
    points.some(
      (p) => p.attributes['mcp.method.name'] === 'tools/call' && p.attributes['error.type'] === 'upstream_error',
    ),
    "the upstream's error is the error.type",
  );
});
