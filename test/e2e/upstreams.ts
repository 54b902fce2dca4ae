// Upstreams for the e2e tests: the legacy fixture (or the 2026 one) as a child process (so it
// can be killed and brought back on the same port), a raw node:http upstream that speaks just
// enough legacy Streamable HTTP to open a session, then misbehaves on tools/call as told, and
// one that sends its change notifications on call streams only.

import type { ChildProcess } from 'node:child_process';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { LegacyServerStats } from '../fixtures/legacy-server.js';
import { spawnOwned, stopProcess, type Owner } from '../helpers/processes.js';

const FIXTURE_CLI = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));
export const MODERN_FIXTURE = fileURLToPath(new URL('../fixtures/modern-server.js', import.meta.url));

export interface FixtureProcess {
  url: string;
  port: number;
  child: ChildProcess;
  stats(): Promise<LegacyServerStats>;
  expireSessions(): Promise<number>;
  /** SIGKILL: no goodbye to anyone. */
  kill(): Promise<void>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
}

export interface FixtureOptions {
  /** More CLI flags for the fixture. */
  args?: string[];
  /** The fixture's built script (MODERN_FIXTURE: the 2026 one); the legacy fixture when not given. */
  script?: string;
  /** The test that owns the process: stopped when it ends. The root tap (end of file) when none is given. */
  t?: Owner;
}

/** A fixture (the legacy one unless told) as a child process on `port` (0: any free one), stopped with its test. */
export async function spawnFixture(port = 0, opts: FixtureOptions = {}): Promise<FixtureProcess> {
  const args = [opts.script ?? FIXTURE_CLI, '--port', String(port), ...(opts.args ?? [])];
  const child = spawnOwned(process.execPath, args, { t: opts.t, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const info = await new Promise<{ url: string; port: number }>((resolve, reject) => {
    let buf = '';
    // Generous: a busy machine can take long to start a node process; only a hang should reach it.
    const timer = setTimeout(() => reject(new Error(`fixture did not start: ${stderr}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      try {
        resolve(JSON.parse(buf.slice(0, nl)) as { url: string; port: number });
      } catch (err) {
        reject(err as Error);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`fixture exited with ${code}: ${stderr}`));
    });
  });
  const base = new URL(info.url);
  const stopWith = (signal: NodeJS.Signals) => async () => {
    await stopProcess(child, { signal });
  };
  return {
    ...info,
    child,
    stats: async () => (await (await fetch(new URL('/__stats', base))).json()) as LegacyServerStats,
    expireSessions: async () =>
      ((await (await fetch(new URL('/__expire-sessions', base), { method: 'POST' })).json()) as { expired: number })
        .expired,
    kill: stopWith('SIGKILL'),
    stop: stopWith('SIGTERM'),
  };
}

export type CallBehaviour = (res: ServerResponse, msg: { id: unknown; method: string }) => void;

export interface RawUpstream {
  url: string;
  /** Methods received, in order (notifications included). */
  methods: string[];
  close(): Promise<void>;
}

const SESSION_ID = 'raw-session-0001';

function json(res: ServerResponse, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * A legacy upstream that initializes normally and lists one tool, then answers tools/call with
 * `onCall`. With `hangAll`, it accepts every connection and never answers anything.
 */
export async function rawUpstream(opts: { onCall?: CallBehaviour; hangAll?: boolean }): Promise<RawUpstream> {
  const methods: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let msg: { id?: unknown; method?: string } = {};
      try {
        msg = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as typeof msg;
      } catch {
        /* not JSON: treated as unknown */
      }
      methods.push(msg.method ?? `${req.method ?? '?'} (no method)`);
      if (opts.hangAll) return;
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
      if (msg.id === undefined) return void res.writeHead(202).end();
      switch (msg.method) {
        case 'initialize':
          return json(
            res,
            {
              jsonrpc: '2.0',
              id: msg.id,
              result: {
                protocolVersion: '2025-11-25',
                capabilities: { tools: {} },
                serverInfo: { name: 'raw', version: '1.0.0' },
              },
            },
            { 'mcp-session-id': SESSION_ID },
          );
        case 'tools/list':
          return json(res, {
            jsonrpc: '2.0',
            id: msg.id,
            result: { tools: [{ name: 'misbehave', inputSchema: { type: 'object', properties: {} } }] },
          });
        case 'tools/call':
          return opts.onCall ? opts.onCall(res, { id: msg.id, method: msg.method }) : undefined;
        default:
          return json(res, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
      }
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    methods,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A legacy upstream with no GET stream that sends its change notifications on call streams: on
 * `flip` (tools/call) a tools/list_changed, on prompts/list a prompts/list_changed. `geo` has an
 * x-mcp-header annotation until the first flip; each flip toggles it.
 */
export async function callStreamUpstream(t: { teardown(fn: () => unknown): void }): Promise<string> {
  let flipped = false;
  const geo = () => ({
    name: 'geo',
    inputSchema: {
      type: 'object',
      properties: { region: flipped ? { type: 'string' } : { type: 'string', 'x-mcp-header': 'Region' } },
    },
  });
  const sse = (res: http.ServerResponse, ...messages: unknown[]) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(messages.map((m) => `event: message\ndata: ${JSON.stringify(m)}\n\n`).join(''));
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
      const msg = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        id?: number;
        method: string;
        params?: { name?: string };
      };
      if (msg.id === undefined) return void res.writeHead(202).end();
      const result = (r: unknown) => ({ jsonrpc: '2.0', id: msg.id, result: r });
      const headers = { 'content-type': 'application/json', 'mcp-session-id': 'call-stream-session' };
      switch (msg.method) {
        case 'initialize':
          res.writeHead(200, headers);
          return void res.end(
            JSON.stringify(
              result({
                protocolVersion: '2025-11-25',
                capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } },
                serverInfo: { name: 'call-stream', version: '1.0.0' },
              }),
            ),
          );
        case 'tools/list':
          return sse(res, result({ tools: [geo(), { name: 'flip', inputSchema: { type: 'object' } }] }));
        case 'tools/call':
          if (msg.params?.name === 'flip') {
            flipped = !flipped;
            return sse(res, { jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, result({ content: [] }));
          }
          return sse(res, result({ content: [{ type: 'text', text: 'geo ok' }] }));
        case 'prompts/list':
          return sse(res, { jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }, result({ prompts: [] }));
        default:
          return sse(res, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}
