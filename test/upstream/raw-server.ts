// Small node:http servers on 127.0.0.1:0 that misbehave on purpose, for what the SDK will not do;
// plus a client factory. Every request is recorded; everything is closed in teardown.

import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  UpstreamClient,
  type SessionRef,
  type UpstreamClientOptions,
  type UpstreamEndpoint,
} from '../../src/upstream/http/legacy-client.js';
import { logSink, type LogSink } from './log-sink.js';
import { TargetSet } from '../../src/upstream/core/targets.js';

export interface HasTeardown {
  teardown(fn: () => unknown): void;
}

export interface RawSeen {
  method: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  at: number;
}

export type RawHandler = (req: IncomingMessage, res: ServerResponse, body: unknown) => void | Promise<void>;

export const SESSION: SessionRef = { sessionId: 'sess-raw-0123', protocolVersion: '2025-11-25' };
export const RAW_SECRET = 'Bearer raw-secret-token';

export interface RawServer {
  url: string;
  seen: RawSeen[];
  connections(): number;
}

export async function rawServer(t: HasTeardown, handler: RawHandler): Promise<RawServer> {
  const seen: RawSeen[] = [];
  let connections = 0;
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body: unknown = text === '' ? undefined : JSON.parse(text);
      seen.push({ method: req.method ?? '', headers: req.headers, body, at: Date.now() });
      Promise.resolve(handler(req, res, body)).catch(() => res.destroy());
    });
  });
  http.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });
  const { port } = http.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/mcp`, seen, connections: () => connections };
}

export function rawClient(
  t: HasTeardown,
  url: string,
  endpoint: Partial<UpstreamEndpoint> = {},
  options: UpstreamClientOptions = {},
): { client: UpstreamClient; sink: LogSink } {
  const sink = logSink();
  const client = new UpstreamClient(
    {
      name: 'raw',
      targets: new TargetSet([url], { ejectAfterFailures: 1, ejectMs: 1000 }),
      headers: { authorization: RAW_SECRET },
      connectTimeoutMs: 500,
      requestTimeoutMs: 3000,
      maxResponseBytes: 1 << 20,
      ...endpoint,
    },
    sink.log,
    options,
  );
  t.teardown(() => client.destroy());
  return { client, sink };
}

export function startSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

export function event(data: unknown, fields: { id?: string; retry?: number } = {}): string {
  let out = '';
  if (fields.id !== undefined) out += `id: ${fields.id}\n`;
  if (fields.retry !== undefined) out += `retry: ${fields.retry}\n`;
  return `${out}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

export function isPost(body: unknown, key: 'method' | 'result' | 'error', value?: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const v = (body as Record<string, unknown>)[key];
  return value === undefined ? v !== undefined : v === value;
}

export function reasonOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null ? (err as { reason?: string }).reason : undefined;
}
