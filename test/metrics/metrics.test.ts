// After a scripted run the admin port's Prometheus scrape shows exactly the expected counts: by
// method, name, result type and outcome; multi-round rounds and retries; the pending-call and
// listen-stream gauges; upstream latency; client revisions. The data port serves no /metrics.

import t from 'tap';
import { VERSION } from '../../src/version.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { ALL_CAPS, ELICIT, nameAnswer, rpc, type Reply } from '../mrtr/wire.js';
import { META_CAPABILITIES, modernBody, modernHeaders } from '../e2e/wire.js';
import { until } from '../helpers/until.js';

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

const admin = causeway.adminUrl!;
/** Requests declare ALL_CAPS (one upstream session) unless they say otherwise. */
const call = (method: string, params: Record<string, unknown>): Promise<Reply> =>
  rpc(causeway.url, method, params, { caps: ALL_CAPS });

async function scrape(): Promise<string> {
  const res = await fetch(`${admin}/metrics`);
  t.equal(res.status, 200);
  return res.text();
}

function value(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

const modern = (method: string, name: string, resultType: string, outcome: string) =>
  `causeway_modern_requests_total{upstream="default",method="${method}",` +
  `name="${name}",result_type="${resultType}",outcome="${outcome}"}`;

t.test('the admin port answers probes and 404s the rest; the data port has no /metrics', async (t) => {
  t.equal((await fetch(`${admin}/healthz`)).status, 200);
  t.equal((await fetch(`${admin}/readyz`)).status, 200);
  t.equal((await fetch(`${admin}/mcp`)).status, 404);
  t.equal((await fetch(`${admin}/metrics`, { method: 'POST' })).status, 405);
  const origin = new URL(causeway.url).origin;
  const data = await fetch(`${origin}/metrics`);
  t.equal(data.status, 404, 'no /metrics on the data port');
  t.notMatch(await data.text(), /causeway_/);
  t.equal((await fetch(`${origin}/healthz`)).status, 200, 'k8s probes stay on the data port');
  t.equal((await fetch(`${origin}/readyz`)).status, 200);
});

t.test('a scripted run gives exact counts', async (t) => {
  // tools/call: three known, one the upstream never listed, one refused locally.
  for (let i = 0; i < 3; i++)
    t.equal((await call('tools/call', { name: 'echo', arguments: { text: 'x' } })).status, 200);
  t.equal((await call('tools/list', {})).status, 200);
  const unknown = await call('tools/call', { name: 'no_such_tool', arguments: {} });
  t.equal(unknown.body.error?.code, -32602, 'the upstream refuses an unknown tool in-band');
  const refused = await rpc(
    causeway.url,
    'tools/call',
    { name: 'test_missing_capability', arguments: {} },
    { caps: {} },
  );
  t.equal(refused.body.error?.code, -32021, 'an undeclared ask is refused locally');

  // One multi-round call: a round, then the retry on the held call.
  const first = await call('tools/call', { name: ELICIT, arguments: {} });
  t.equal(first.body.result?.resultType, 'input_required');
  const held = await scrape();
  t.equal(value(held, 'causeway_mrtr_pending_calls'), 1, 'the call is held between rounds');
  t.equal(value(held, 'causeway_pooled_sessions{upstream="default"}'), 2, 'two capability sets, two pooled sessions');
  t.match(held, /^causeway_requests_in_flight 0$/m, 'nothing in flight between rounds (the scrape is no MCP request)');
  t.equal(value(held, 'causeway_session_store_up'), 1, 'the memory store always answers');
  t.match(
    held,
    new RegExp(
      `^causeway_build_info\\{version="${VERSION}",node="${process.version}",config="[\\da-f]{12}"\\} 1$`,
      'm',
    ),
    'build info names the running version and configuration',
  );

  const key = Object.keys(first.body.result.inputRequests)[0]!;
  const second = await call('tools/call', {
    name: ELICIT,
    arguments: {},
    requestState: first.body.result.requestState,
    inputResponses: { [key]: nameAnswer('Ada') },
  });
  t.equal(second.body.result?.resultType, 'complete');

  // Prompts and resources by listed name and template.
  t.equal((await call('prompts/list', {})).status, 200);
  t.equal((await call('prompts/get', { name: 'test_simple_prompt' })).status, 200);
  const missing = await call('prompts/get', { name: 'no_such_prompt' });
  t.ok(missing.body.error, 'the upstream refuses an unknown prompt in-band');
  t.equal((await call('resources/templates/list', {})).status, 200);
  t.equal((await call('resources/read', { uri: 'test://template/42/data' })).status, 200);
  t.equal((await call('resources/read', { uri: 'test://static-text' })).status, 200);

  // A rejected request and a legacy client.
  t.equal((await call('nope/nope', {})).status, 404);
  const legacy = await fetch(causeway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'l', version: '1' } },
    }),
  });
  await legacy.arrayBuffer();

  const m = await scrape();
  t.equal(value(m, modern('tools/call', 'echo', 'complete', 'ok')), 3);
  t.equal(value(m, modern('tools/list', 'none', 'complete', 'ok')), 1);
  t.equal(value(m, modern('tools/call', '_other', 'error', 'upstream_error')), 1, 'an unlisted tool counts as _other');
  t.equal(value(m, modern('tools/call', 'test_missing_capability', 'error', 'missing_client_capability')), 1);
  t.equal(value(m, modern('tools/call', ELICIT, 'input_required', 'ok')), 1);
  t.equal(value(m, modern('tools/call', ELICIT, 'complete', 'ok')), 1);
  t.equal(value(m, modern('prompts/list', 'none', 'complete', 'ok')), 1);
  t.equal(value(m, modern('prompts/get', 'test_simple_prompt', 'complete', 'ok')), 1);
  t.equal(value(m, modern('prompts/get', '_other', 'error', 'upstream_error')), 1);
  t.equal(value(m, modern('resources/read', 'test://template/{id}/data', 'complete', 'ok')), 1, 'read by template');
  t.equal(value(m, modern('resources/read', '_other', 'complete', 'ok')), 1, 'a static resource matches no template');
  t.equal(
    value(
      m,
      'causeway_modern_request_duration_seconds_count{upstream="default",' +
        'method="tools/call",name="echo",result_type="complete"}',
    ),
    3,
  );

  t.equal(value(m, 'causeway_mrtr_rounds_total{upstream="default",method="tools/call"}'), 1);
  t.equal(value(m, 'causeway_mrtr_retries_total{upstream="default",method="tools/call",via="held"}'), 1);
  t.equal(value(m, 'causeway_mrtr_pending_calls'), 0, 'nothing held after the last round');

  // Upstream latency: every call except those on which the upstream asked the client.
  t.equal(
    value(m, 'causeway_upstream_request_duration_seconds_count{upstream="default",method="tools/call",result="ok"}'),
    3,
    'echo x3',
  );
  t.equal(
    value(m, 'causeway_upstream_request_duration_seconds_count{upstream="default",method="tools/call",result="error"}'),
    1,
    'the unlisted tool',
  );
  // The first session's call has an argument an annotation could name: its tools are read, by the
  // upstream's scout (subscriptions/standing.ts; the first client can be asked) or, when its call
  // comes before the scout read them, by the session itself. The other session's call has none.
  const lists = value(
    m,
    'causeway_upstream_request_duration_seconds_count{upstream="default",method="tools/list",result="ok"}',
  );
  t.ok(lists === 2 || lists === 3, `tools/list, the scout's, and perhaps the first session's schema fetch: ${lists}`);
  t.equal(
    value(
      m,
      'causeway_upstream_request_duration_seconds_count{upstream="default",method="prompts/get",result="error"}',
    ),
    1,
  );

  t.equal(
    value(m, 'causeway_requests_total{era="modern",method="tools/call",outcome="ok"}'),
    6,
    'front door: tools/call answered 200',
  );
  t.equal(
    value(m, 'causeway_requests_total{era="modern",method="tools/call",outcome="client_error"}'),
    1,
    'the -32602 of the unlisted tool',
  );
  t.equal(value(m, 'causeway_requests_total{era="rejected",method="none",outcome="client_error"}'), 1);
  t.equal(value(m, 'causeway_requests_total{era="legacy",method="initialize",outcome="ok"}'), 1);
  t.equal(value(m, 'causeway_client_revision_requests_total{era="modern",revision="2026-07-28"}'), 14);
  t.equal(value(m, 'causeway_client_revision_requests_total{era="rejected",revision="2026-07-28"}'), 1);
  t.equal(value(m, 'causeway_client_revision_requests_total{era="legacy",revision="2025-06-18"}'), 1);
  t.equal(
    value(m, 'causeway_upstream_initialize_total{upstream="default",reason="new"}'),
    2,
    'one pooled session per capability set',
  );
  t.match(m, /process_cpu_seconds_total/, 'Node process metrics');
  t.match(m, /nodejs_eventloop_lag_p99_seconds/);
});

t.test('a listen stream shows in the gauge while open and is counted when it ends', async (t) => {
  const abort = new AbortController();
  const res = await fetch(causeway.url, {
    method: 'POST',
    headers: modernHeaders('subscriptions/listen'),
    body: JSON.stringify(
      modernBody('subscriptions/listen', { notifications: { toolsListChanged: true } }, 'listen-1', {
        [META_CAPABILITIES]: ALL_CAPS,
      }),
    ),
    signal: abort.signal,
  });
  t.equal(res.status, 200);
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes('notifications/subscriptions/acknowledged')) {
    const { value: chunk, done } = await reader.read();
    if (done) break;
    seen += new TextDecoder().decode(chunk);
  }
  t.match(seen, /acknowledged/);
  const open = await scrape();
  t.equal(value(open, 'causeway_listen_streams'), 1);
  t.equal(value(open, 'causeway_requests_in_flight'), 1, 'an open listen stream is a request in flight');

  abort.abort();
  await reader.cancel().catch(() => undefined);
  let m = '';
  const counted = async () => {
    m = await scrape();
    return value(m, modern('subscriptions/listen', 'none', 'complete', 'ok')) === 1;
  };
  t.ok(await until(counted, { what: 'the ended stream to be counted' }), 'the ended stream is counted once');
  t.equal(value(m, 'causeway_listen_streams'), 0);
});
