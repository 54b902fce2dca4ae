// A minimal, fast legacy MCP server (2025-11-25 Streamable HTTP) on raw node:http, so the bench
// measures Causeway's own cost rather than an SDK's. Sessionful (initialize -> Mcp-Session-Id,
// 404 for an unknown session), canned answers built once:
//   tools/list                                exactly --tools tools (default 1,000), JSON
//   tools/call echo                           JSON
//   tools/call progress_many {steps}          SSE: `steps` notifications/progress, then the result
//   tools/call test_input_required_result_multi_round
//                                             SSE: elicitation/create (inputKey step1), waits for the
//                                             client's answer, step2 likewise, then the result
// GET /__stats gives {initializeCount, sessions, requests, exchanges}. Prints {"url","port"} and serves until SIGTERM.
//
//   node dist/bench/raw-upstream.js --port 0 [--tools 1000]

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = any;

interface Session {
  id: string;
  /** Asks sent on a call's SSE stream, waiting for the client's response, by JSON-RPC id. */
  asks: Map<string, (message: Json) => void>;
  nextAsk: number;
}

const INPUT_KEY_META = 'causeway/inputKey';

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const v = Number.parseInt(process.argv[i + 1] ?? '', 10);
  if (!Number.isInteger(v) || v < 0) throw new Error(`${name} needs a non-negative integer`);
  return v;
}

const PORT = argValue('--port', 0);
const TOOL_COUNT = Math.max(3, argValue('--tools', 1000));

function toolsJson(n: number): string {
  const tools: Json[] = [
    {
      name: 'echo',
      description: 'Returns its text argument',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    },
    {
      name: 'progress_many',
      description: 'Sends steps progress notifications when a progressToken is given',
      inputSchema: { type: 'object', properties: { steps: { type: 'integer', minimum: 0 } }, required: ['steps'] },
    },
    {
      name: 'test_input_required_result_multi_round',
      description: 'Asks step1 (name), then step2 (color)',
      inputSchema: { type: 'object', properties: {} },
    },
  ];
  for (let i = 1; tools.length < n; i++) {
    tools.push({
      name: `tool_${String(i).padStart(4, '0')}`,
      description: `Dummy tool number ${i} for list and bench tests`,
      inputSchema: { type: 'object', properties: { value: { type: 'string' } } },
    });
  }
  return JSON.stringify({ tools });
}

const TOOLS_RESULT = toolsJson(TOOL_COUNT);
const INIT_RESULT = JSON.stringify({
  protocolVersion: '2025-11-25',
  capabilities: { tools: { listChanged: false } },
  serverInfo: { name: 'causeway-bench-raw-upstream', version: '1.0.0' },
});

const sessions = new Map<string, Session>();
// exchanges: every HTTP request by kind (`POST <method>`, `POST response`, `GET`, `DELETE`), for the cold-call count.
const stats = { initializeCount: 0, requests: 0, exchanges: {} as Record<string, number> };
const count = (kind: string) => (stats.exchanges[kind] = (stats.exchanges[kind] ?? 0) + 1);

function idJson(id: unknown): string {
  return JSON.stringify(id ?? null);
}

function sendRaw(res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  });
  res.end(body);
}

function result(res: http.ServerResponse, id: unknown, resultJson: string, headers?: Record<string, string>): void {
  sendRaw(res, 200, `{"jsonrpc":"2.0","id":${idJson(id)},"result":${resultJson}}`, headers);
}

function rpcError(res: http.ServerResponse, status: number, id: unknown, code: number, message: string): void {
  sendRaw(res, status, JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code, message } }));
}

function textResult(text: string): string {
  return JSON.stringify({ content: [{ type: 'text', text }] });
}

function sseOpen(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

function sseEvent(res: http.ServerResponse, message: string): void {
  res.write(`event: message\ndata: ${message}\n\n`);
}

function ask(session: Session, res: http.ServerResponse, key: string, message: string, prop: string): Promise<Json> {
  const id = `ask-${++session.nextAsk}`;
  const request = {
    jsonrpc: '2.0',
    id,
    method: 'elicitation/create',
    params: {
      message,
      requestedSchema: { type: 'object', properties: { [prop]: { type: 'string' } }, required: [prop] },
      _meta: { [INPUT_KEY_META]: key },
    },
  };
  return new Promise((resolve, reject) => {
    session.asks.set(id, resolve);
    res.once('close', () => {
      if (session.asks.delete(id)) reject(new Error('client went away'));
    });
    sseEvent(res, JSON.stringify(request));
  });
}

async function multiRound(session: Session, res: http.ServerResponse, id: unknown): Promise<void> {
  sseOpen(res);
  const first = await ask(session, res, 'step1', 'Step 1: What is your name?', 'name');
  const second = await ask(session, res, 'step2', 'Step 2: What is your favorite color?', 'color');
  const name = first?.result?.content?.name ?? 'friend';
  const color = second?.result?.content?.color ?? 'unknown';
  sseEvent(
    res,
    `{"jsonrpc":"2.0","id":${idJson(id)},` +
      `"result":${textResult(`Multi-round complete for ${name} who likes ${color}`)}}`,
  );
  res.end();
}

function progress(res: http.ServerResponse, id: unknown, token: unknown, steps: number): void {
  sseOpen(res);
  for (let i = 1; i <= steps; i++) {
    sseEvent(
      res,
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: token, progress: i, total: steps, message: `step ${i} of ${steps}` },
      }),
    );
  }
  sseEvent(res, `{"jsonrpc":"2.0","id":${idJson(id)},"result":${textResult(`sent ${steps}`)}}`);
  res.end();
}

function callTool(session: Session, res: http.ServerResponse, msg: Json): void {
  const name = msg.params?.name;
  const args = msg.params?.arguments ?? {};
  switch (name) {
    case 'echo':
      return result(res, msg.id, textResult(typeof args.text === 'string' ? args.text : ''));
    case 'progress_many': {
      const steps = typeof args.steps === 'number' ? Math.max(0, Math.floor(args.steps)) : 10;
      const token = msg.params?._meta?.progressToken;
      if (token === undefined) return result(res, msg.id, textResult('sent 0'));
      return progress(res, msg.id, token, steps);
    }
    case 'test_input_required_result_multi_round':
      multiRound(session, res, msg.id).catch(() => res.destroy());
      return;
    default:
      if (typeof name === 'string' && name.startsWith('tool_'))
        return result(res, msg.id, textResult(`${name}:${String(args.value ?? '')}`));
      return rpcError(res, 200, msg.id, -32602, `Tool ${String(name)} not found`);
  }
}

function handlePost(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
  let msg: Json;
  try {
    msg = JSON.parse(raw);
  } catch {
    return rpcError(res, 400, null, -32700, 'Parse error');
  }
  stats.requests++;
  count(typeof msg?.method === 'string' ? `POST ${msg.method}` : 'POST response');
  const sid = req.headers['mcp-session-id'];
  if (sid === undefined) {
    if (msg?.method !== 'initialize')
      return rpcError(res, 400, msg?.id, -32000, 'Bad Request: No valid session ID provided');
    stats.initializeCount++;
    const id = randomUUID();
    sessions.set(id, { id, asks: new Map(), nextAsk: 0 });
    return result(res, msg.id, INIT_RESULT, { 'mcp-session-id': id });
  }
  const session = sessions.get(String(sid));
  if (!session) return rpcError(res, 404, msg?.id, -32001, 'Session not found');
  if (typeof msg?.method !== 'string') {
    // A response to one of our asks.
    const waiting = msg?.id !== undefined ? session.asks.get(String(msg.id)) : undefined;
    if (waiting) {
      session.asks.delete(String(msg.id));
      waiting(msg);
    }
    res.writeHead(202, { 'content-length': '0' });
    res.end();
    return;
  }
  if (msg.id === undefined) {
    res.writeHead(202, { 'content-length': '0' });
    res.end();
    return;
  }
  switch (msg.method) {
    case 'tools/list':
      return result(res, msg.id, TOOLS_RESULT);
    case 'tools/call':
      return callTool(session, res, msg);
    case 'ping':
      return result(res, msg.id, '{}');
    case 'initialize':
      return rpcError(res, 400, msg.id, -32600, 'Already initialized');
    default:
      return rpcError(res, 200, msg.id, -32601, `Method not found: ${msg.method}`);
  }
}

const server = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/__stats') {
    sendRaw(res, 200, JSON.stringify({ ...stats, sessions: sessions.size }));
    return;
  }
  if (path !== '/mcp') return rpcError(res, 404, null, -32000, 'not found');
  if (req.method === 'POST') {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () =>
      handlePost(req, res, chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')),
    );
    return;
  }
  if (req.method !== 'POST') count(req.method ?? '?');
  if (req.method === 'DELETE') {
    const sid = req.headers['mcp-session-id'];
    if (sid !== undefined && sessions.delete(String(sid))) {
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      return;
    }
    return rpcError(res, 404, null, -32001, 'Session not found');
  }
  // No standalone GET stream.
  res.writeHead(405, { allow: 'POST, DELETE', 'content-length': '0' });
  res.end();
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;
server.requestTimeout = 0;

server.listen(PORT, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/mcp`, port })}\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
