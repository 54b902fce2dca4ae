// After a scripted run the Prometheus scrape shows exactly the expected counts, and requests
// naming thousands of bogus tools leave the number of series unchanged.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const headers = (method: string, name?: string): Record<string, string> => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': method,
  ...(name === undefined ? {} : { 'mcp-name': name }),
});

async function modern(method: string, params: Record<string, unknown>, name?: string): Promise<number> {
  const res = await fetch(causeway.url, {
    method: 'POST',
    headers: headers(method, name),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function scrape(): Promise<string> {
  return (await fetch(causeway.url.replace(/\/mcp$/, '/metrics'))).text();
}

function value(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

t.test('a scripted run gives exact counts', async (t) => {
  for (let i = 0; i < 3; i++) t.equal(await modern('tools/call', { name: 'echo', arguments: { text: 'x' } }, 'echo'), 200);
  t.equal(await modern('tools/list', {}), 200);
  t.equal(await modern('nope/nope', {}), 404);
  const legacy = await fetch(causeway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'l', version: '1' } } }),
  });
  await legacy.arrayBuffer();
  const m = await scrape();
  t.equal(value(m, 'causeway_requests_total{era="modern",method="tools/call",outcome="ok"}'), 3);
  t.equal(value(m, 'causeway_requests_total{era="modern",method="tools/list",outcome="ok"}'), 1);
  t.equal(value(m, 'causeway_requests_total{era="rejected",method="none",outcome="client_error"}'), 1);
  t.equal(value(m, 'causeway_requests_total{era="legacy",method="initialize",outcome="ok"}'), 1);
  t.equal(value(m, 'causeway_upstream_initialize_total{upstream="default",reason="new"}'), 1, 'one pooled session');
  t.equal(value(m, 'causeway_session_pool_lookups_total{upstream="default",result="hit"}'), 3);
  t.equal(value(m, 'causeway_request_duration_seconds_count{era="modern",method="tools/call"}'), 3);
  t.match(m, /process_cpu_seconds_total/, 'Node process metrics');
});

t.test('bogus tool names do not grow the series count', async (t) => {
  const series = (text: string) => text.split('\n').filter((l) => l.startsWith('causeway_')).length;
  const before = series(await scrape());
  for (let i = 0; i < 2000; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => modern('tools/call', { name: `bogus_${i + j}`, arguments: {} }, `bogus_${i + j}`)));
  }
  const after = await scrape();
  t.equal(series(after), before, 'no new series');
  t.notMatch(after, /bogus_/, 'no tool name leaks into a label');
});
