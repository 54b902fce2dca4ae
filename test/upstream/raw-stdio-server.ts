// A hand-written stdio MCP server for the channel tests: newline-delimited JSON on stdin/stdout,
// each tools/call named after the behaviour it triggers (see TOOLS below). Flags:
// --stubborn: ignores the end of stdin and SIGTERM (only SIGKILL stops it).

import { createInterface } from 'node:readline';

type Msg = {
  jsonrpc: '2.0';
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: unknown;
};

const stubborn = process.argv.includes('--stubborn');
const send = (m: Msg): void => void process.stdout.write(`${JSON.stringify(m)}\n`);
const waiting = new Map<string, (m: Msg) => void>();
let asks = 0;

function ask(method: string, params: Record<string, unknown>): Promise<Msg> {
  const id = `srv-${++asks}`;
  send({ jsonrpc: '2.0', id, method, params });
  return new Promise((resolve) => waiting.set(id, resolve));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const TOOLS: Record<string, (req: Msg, args: Record<string, unknown>) => Promise<unknown>> = {
  async wait(_req, args) {
    await sleep(typeof args.ms === 'number' ? args.ms : 100);
    return { content: [{ type: 'text', text: 'waited' }] };
  },
  async ping_me() {
    const pong = await ask('ping', {});
    return { content: [{ type: 'text', text: `pong ${JSON.stringify(pong.result)}` }] };
  },
  async elicit() {
    const answer = await ask('elicitation/create', {
      message: 'name?',
      requestedSchema: { type: 'object', properties: {} },
    });
    return { content: [{ type: 'text', text: `answer ${JSON.stringify(answer.result ?? answer.error)}` }] };
  },
  async notify(req) {
    const token = (req.params?._meta as Record<string, unknown> | undefined)?.progressToken;
    if (token !== undefined)
      send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1 } });
    send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'someone-else', progress: 1 } });
    send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hi' } });
    send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await sleep(50);
    return { content: [] };
  },
  async garbage() {
    process.stdout.write('this is not json\n');
    process.stdout.write('\n');
    return { content: [{ type: 'text', text: 'after garbage' }] };
  },
  async long_line() {
    process.stdout.write(`${'x'.repeat(300_000)}\n`);
    await sleep(60_000);
    return {};
  },
  async stderr_flood() {
    for (let i = 0; i < 200; i++) process.stderr.write(`noise ${i}\n`);
    return { content: [] };
  },
  async exit() {
    setTimeout(() => process.exit(3), 20);
    await sleep(60_000);
    return {};
  },
  async id_less_error() {
    send({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no id' } });
    await sleep(60_000);
    return {};
  },
};

async function handle(m: Msg): Promise<void> {
  if (m.method === undefined) {
    if (typeof m.id === 'string') waiting.get(m.id)?.(m);
    return;
  }
  if (m.id === undefined) return;
  if (m.method === 'initialize') {
    send({
      jsonrpc: '2.0',
      id: m.id,
      result: {
        protocolVersion: '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'raw-stdio', version: '1' },
      },
    });
    return;
  }
  if (m.method === 'tools/call') {
    const name = String(m.params?.name);
    const tool = TOOLS[name];
    if (!tool) return send({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: `no tool ${name}` } });
    const result = await tool(m, (m.params?.arguments as Record<string, unknown> | undefined) ?? {});
    return send({ jsonrpc: '2.0', id: m.id, result: result as Record<string, unknown> });
  }
  send({ jsonrpc: '2.0', id: m.id, result: {} });
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === '') return;
  void handle(JSON.parse(line) as Msg);
});
process.stderr.write(`raw-stdio started ${process.pid}\n`);
if (stubborn) {
  process.on('SIGTERM', () => undefined);
  setInterval(() => undefined, 1000);
} else process.stdin.once('end', () => process.exit(0));
