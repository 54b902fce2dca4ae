// log.accessSample: with 1, every MCP request ends in one info line (era, method, name, status,
// duration, request id, and what the stages learned: upstream, JSON-RPC error code, session
// opened or reused, result type, multi-round round, trace id), whatever its outcome; with 0 (the
// default) none does; tokens never appear. With debug on, the upstream client's lines written
// during a request carry its request id.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { modernBody, modernHeaders } from '../e2e/wire.js';
import { until } from '../helpers/until.js';

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());

const TOKEN = 'secret-token-value-never-logged';

async function post(url: string, body: string, headers: Record<string, string>, reqId: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'x-request-id': reqId, authorization: `Bearer ${TOKEN}` },
    body,
  });
  await res.text();
  return res.status;
}

const accessLines = (logs: string[]) =>
  logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request');

t.test('with log.accessSample 1: one line per request, success and failure alike', async (t) => {
  const cw = await startCauseway({
    'upstream.url': upstream.url,
    'log.accessSample': 1,
    'principal.mode': 'bearer',
    'principal.hashSecret': 'access-log-test-secret-0123456789',
  });
  t.teardown(() => cw.close());
  const call = modernBody('tools/call', { name: 'echo', arguments: { text: 'hi' } });
  const traced = {
    ...modernHeaders('tools/call', 'echo'),
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  };
  t.equal(await post(cw.url, JSON.stringify(call), traced, 'req-ok'), 200);
  t.equal(await post(cw.url, '{not json', modernHeaders('tools/call', 'echo'), 'req-bad'), 400);
  const unknown = modernBody('tools/call', { name: 'no_such_tool', arguments: {} });
  t.equal(await post(cw.url, JSON.stringify(unknown), modernHeaders('tools/call', 'no_such_tool'), 'req-unknown'), 200);
  t.equal(await post(cw.url, JSON.stringify(call), modernHeaders('tools/call', 'echo'), 'req-again'), 200);
  // The line is written when the response closes, just after the client has read it.
  await until(() => accessLines(cw.logs).length >= 4, { what: 'four access lines' });
  const lines = accessLines(cw.logs);
  t.match(lines, [
    {
      level: 30,
      reqId: 'req-ok',
      era: 'modern',
      method: 'tools/call',
      name: 'echo',
      status: 200,
      finished: true,
      upstream: 'default',
      session: 'opened',
      resultType: 'complete',
      traceId: '0af7651916cd43dd8448eb211c80319c',
    },
    { level: 30, reqId: 'req-bad', era: 'rejected', status: 400, code: -32700 },
    {
      level: 30,
      reqId: 'req-unknown',
      era: 'modern',
      method: 'tools/call',
      name: 'no_such_tool',
      status: 200,
      upstream: 'default',
      resultType: 'error',
      code: -32602,
    },
    { level: 30, reqId: 'req-again', session: 'reused', resultType: 'complete' },
  ]);
  t.notOk('code' in lines[0]!, 'no error code on a success');
  t.notOk('round' in lines[0]!, 'no round on a first call');

  const caps = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
  const ask = modernBody('tools/call', { name: 'test_input_required_result_elicitation', arguments: {} }, 'r1', caps);
  const headers = modernHeaders('tools/call', 'test_input_required_result_elicitation');
  const first = await fetch(cw.url, {
    method: 'POST',
    headers: { ...headers, 'x-request-id': 'req-round-1', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(ask),
  });
  const round = (await first.json()) as { result: { requestState: string } };
  const retry = modernBody(
    'tools/call',
    {
      name: 'test_input_required_result_elicitation',
      arguments: {},
      requestState: round.result.requestState,
      inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } },
    },
    'r2',
    caps,
  );
  t.equal(await post(cw.url, JSON.stringify(retry), headers, 'req-round-2'), 200);
  await until(() => accessLines(cw.logs).length >= 6, { what: 'six access lines' });
  const rounds = accessLines(cw.logs).slice(4);
  t.match(rounds, [
    { reqId: 'req-round-1', resultType: 'input_required' },
    { reqId: 'req-round-2', resultType: 'complete', round: 1 },
  ]);
  t.notOk('round' in rounds[0]!, 'the first call answers no round');
  t.ok(
    lines.every((l) => typeof l.ms === 'number' && (l.ms as number) >= 0),
    'each line has its duration',
  );
  t.notOk(
    cw.logs.some((l) => l.includes(TOKEN)),
    'the bearer token is in no log line',
  );
});

t.test("every answer carries its request id: the client's x-request-id, else a new UUID", async (t) => {
  const cw = await startCauseway({ 'upstream.url': upstream.url });
  t.teardown(() => cw.close());
  const echoed = async (what: string, path: string, init: RequestInit, reqId?: string) => {
    const headers = {
      ...(init.headers as Record<string, string>),
      ...(reqId === undefined ? {} : { 'x-request-id': reqId }),
    };
    const res = await fetch(new URL(path, cw.url), { ...init, headers });
    await res.arrayBuffer();
    return { what, status: res.status, id: res.headers.get('x-request-id') };
  };
  const call = JSON.stringify(modernBody('tools/call', { name: 'echo', arguments: { text: 'hi' } }));
  const callHeaders = modernHeaders('tools/call', 'echo');
  const initialize = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  const legacyHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const seen = [
    // The pipeline (the first call reads the tools), then the warm lane (the same call again).
    await echoed('pipeline', cw.url, { method: 'POST', headers: callHeaders, body: call }, 'id-pipeline'),
    await echoed('warm lane', cw.url, { method: 'POST', headers: callHeaders, body: call }, 'id-warm'),
    await echoed('parse error', cw.url, { method: 'POST', headers: callHeaders, body: '{not json' }, 'id-parse'),
    await echoed('unknown path', '/nowhere', { method: 'POST', headers: callHeaders, body: call }, 'id-404'),
    await echoed('legacy face', cw.url, { method: 'POST', headers: legacyHeaders, body: initialize }, 'id-legacy'),
  ];
  t.same(
    seen.map((s) => [s.what, s.status >= 200, s.id]),
    [
      ['pipeline', true, 'id-pipeline'],
      ['warm lane', true, 'id-warm'],
      ['parse error', true, 'id-parse'],
      ['unknown path', true, 'id-404'],
      ['legacy face', true, 'id-legacy'],
    ],
  );
  t.same(
    seen.map((s) => s.status),
    [200, 200, 400, 404, 200],
    'each answered as it should be',
  );
  const fresh = await echoed('warm lane, no id sent', cw.url, { method: 'POST', headers: callHeaders, body: call });
  t.match(
    fresh.id,
    /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    'a new UUID when the client sent none',
  );
});

t.test('by default (log.accessSample 0) no access line is written', async (t) => {
  const cw = await startCauseway({ 'upstream.url': upstream.url });
  t.teardown(() => cw.close());
  const call = modernBody('tools/call', { name: 'echo', arguments: { text: 'hi' } });
  t.equal(await post(cw.url, JSON.stringify(call), modernHeaders('tools/call', 'echo'), 'req-quiet'), 200);
  await cw.close();
  t.same(accessLines(cw.logs), []);
});

t.test('with debug on, the upstream client writes its lines with the request id', async (t) => {
  const cw = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'debug' });
  t.teardown(() => cw.close());
  const call = modernBody('tools/call', { name: 'echo', arguments: { text: 'hi' } });
  t.equal(await post(cw.url, JSON.stringify(call), modernHeaders('tools/call', 'echo'), 'req-debug'), 200);
  const upstreamLines = cw.logs
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.stage === 'upstream' && l.msg === 'upstream request');
  t.ok(upstreamLines.length > 0, 'the upstream client logged the request');
  t.ok(
    upstreamLines.every((l) => l.reqId === 'req-debug'),
    'each with the request id',
  );
});
