// A reference path, not a product: the least a Node.js 2026 -> legacy translator does per
// request — parse the 2026 request, strip `_meta`, forward it on one pooled legacy session over
// an undici Pool, parse the JSON or SSE answer, add `resultType`. No validation, no multi-round,
// no metrics or logs. Its CPU per call is what the translation itself costs in Node, between the
// byte proxy (node-floor.ts) and Causeway.
//
//   node dist/bench/node-translator.js --port P --upstream http://127.0.0.1:U/mcp

import { Pool } from 'undici';
import { arg, badGateway, serve } from './reference.js';

const upstream = new URL(arg('--upstream'));
const pool = new Pool(upstream.origin, { connections: 128, keepAliveTimeout: 60_000 });
const headers: Record<string, string> = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

async function post(message: object): Promise<{ sessionId: string | undefined; answer: any }> {
  const up = await pool.request({ method: 'POST', path: upstream.pathname, headers, body: JSON.stringify(message) });
  const text = await up.body.text();
  const sid = up.headers['mcp-session-id'];
  // SSE: the response is the last event's data (the only one for a plain call).
  const json = String(up.headers['content-type']).startsWith('text/event-stream')
    ? text.slice(text.lastIndexOf('data: ') + 6)
    : text;
  return {
    sessionId: typeof sid === 'string' ? sid : undefined,
    answer: json.trim() === '' ? undefined : JSON.parse(json),
  };
}

const init = await post({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'translator', version: '1' } },
});
headers['mcp-session-id'] = init.sessionId!;
headers['mcp-protocol-version'] = init.answer.result.protocolVersion;
await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
let nextId = 1;

serve((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let msg: any;
    try {
      msg = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-length': '0' }).end();
      return;
    }
    const { _meta, ...params } = msg.params ?? {};
    post({ jsonrpc: '2.0', id: nextId++, method: msg.method, params }).then(
      ({ answer }) => {
        const body = answer.error
          ? { jsonrpc: '2.0', id: msg.id, error: answer.error }
          : { jsonrpc: '2.0', id: msg.id, result: { ...answer.result, resultType: 'complete' } };
        const text = JSON.stringify(body);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      },
      () => badGateway(res),
    );
  });
});
