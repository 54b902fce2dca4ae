// Requests Causeway sends upstream carry Mcp-Method and Mcp-Name, on the modern path and on the
// legacy passthrough, so a header-routing balancer between Causeway and the servers can use them.

import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startCauseway } from '../helpers/causeway.js';
import { modernBody, modernHeaders } from '../e2e/wire.js';

const seen: Array<{ method: string; headers: http.IncomingHttpHeaders }> = [];
const upstream = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d: Buffer) => (body += d.toString()));
  req.on('end', () => {
    if (req.method !== 'POST') {
      seen.push({ method: req.method ?? '?', headers: req.headers });
      res.writeHead(200).end();
      return;
    }
    const msg = JSON.parse(body) as { id?: number | string; method?: string };
    seen.push({ method: msg.method ?? '(response)', headers: req.headers });
    if (msg.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const result =
      msg.method === 'initialize'
        ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } }
        : { content: [{ type: 'text', text: 'ok' }] };
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(msg.method === 'initialize' ? { 'mcp-session-id': 'raw-session' } : {}),
    });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
const causeway = await startCauseway({ 'upstream.url': url });
t.teardown(async () => {
  await causeway.close();
  upstream.close();
});

const last = (method: string) => [...seen].reverse().find((s) => s.method === method);

t.test('legacy passthrough', async (t) => {
  const res = await fetch(causeway.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': 'raw-session',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'héllo', arguments: {} } }),
  });
  t.equal(res.status, 200);
  const up = last('tools/call')!;
  t.equal(up.headers['mcp-method'], 'tools/call');
  t.equal(
    up.headers['mcp-name'],
    `=?base64?${Buffer.from('héllo').toString('base64')}?=`,
    'non-ASCII names are base64-encoded',
  );
  t.equal(up.headers['mcp-session-id'], 'raw-session', 'the legacy session passes through');
});

t.test('modern request', async (t) => {
  const res = await fetch(causeway.url, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'plain'),
    body: JSON.stringify(modernBody('tools/call', { name: 'plain', arguments: {} }, 2)),
  });
  t.equal(res.status, 200);
  const up = last('tools/call')!;
  t.equal(up.headers['mcp-method'], 'tools/call');
  t.equal(up.headers['mcp-name'], 'plain');
  t.equal(up.headers['mcp-protocol-version'], '2025-11-25', 'the negotiated legacy version goes upstream');
});
