// A real legacy MCP server (@modelcontextprotocol/sdk 1.32.2, Streamable HTTP) on 127.0.0.1:0 for the
// upstream client tests: sessionful (404 for unknown sessions, as the spec requires) or stateless
// (a fresh server per POST, GET/DELETE answered 405). It records every HTTP request it receives.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ElicitResultSchema, EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export interface SeenRequest {
  method: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  at: number;
}

export interface SdkFixture {
  url: string;
  seen: SeenRequest[];
  initializeCount(): number;
  servers: Map<string, McpServer>;
  dropSession(sessionId: string): Promise<void>;
  close(): Promise<void>;
}

export interface SdkFixtureOptions {
  stateless?: boolean;
  /** Event store + retry interval: priming events and closeSSEStream() polling (SEP-1699). */
  resumableRetryMs?: number;
}

/**
 * The SDK's example InMemoryEventStore orders ids by timestamp + random suffix, so events stored in
 * the same millisecond replay in random order (its `{}` priming event included). This one counts.
 */
class OrderedEventStore implements EventStore {
  private readonly events: { id: string; streamId: string; message: JSONRPCMessage }[] = [];

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}_${this.events.length}`;
    this.events.push({ id, streamId, message });
    return id;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const at = this.events.findIndex((e) => e.id === lastEventId);
    if (at === -1) return '';
    const streamId = this.events[at]!.streamId;
    for (const e of this.events.slice(at + 1)) if (e.streamId === streamId) await send(e.id, e.message);
    return streamId;
  }
}

function buildServer(): McpServer {
  const server = new McpServer({ name: 'legacy-fixture', version: '1.0.0' }, { capabilities: { logging: {} } });

  server.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));

  server.registerTool('progress-elicit', { description: 'progress then elicitation' }, async (extra) => {
    const progressToken = extra._meta?.progressToken;
    if (progressToken !== undefined) {
      for (let i = 1; i <= 3; i++) {
        const params = { progressToken, progress: i, total: 3 };
        await extra.sendNotification({ method: 'notifications/progress', params });
      }
    }
    const answer = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: 'Your name?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        },
      },
      ElicitResultSchema,
    );
    const name = answer.action === 'accept' ? String(answer.content?.name) : answer.action;
    return { content: [{ type: 'text', text: `hello ${name}` }] };
  });

  server.registerTool('ping-back', { description: 'pings the client mid-call' }, async (extra) => {
    await extra.sendRequest({ method: 'ping' }, EmptyResultSchema);
    return { content: [{ type: 'text', text: 'pinged' }] };
  });

  server.registerTool('poll', { description: 'closes its SSE stream mid-call' }, async (extra) => {
    const progressToken = extra._meta?.progressToken ?? 'p';
    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 1 } });
    extra.closeSSEStream?.();
    await new Promise((r) => setTimeout(r, 150));
    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 2 } });
    return { content: [{ type: 'text', text: 'polled' }] };
  });

  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

function rpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

function isInitialize(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'initialize';
}

export async function startSdkServer(options: SdkFixtureOptions = {}): Promise<SdkFixture> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers = new Map<string, McpServer>();
  const seen: SeenRequest[] = [];
  let initializes = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    seen.push({ method: req.method ?? '', headers: req.headers, body, at: Date.now() });
    if (isInitialize(body)) initializes += 1;

    if (options.stateless) {
      if (req.method !== 'POST') {
        rpcError(res, 405, -32000, 'Method not allowed.');
        return;
      }
      const server = buildServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }

    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const transport = transports.get(sid);
      if (transport === undefined) {
        rpcError(res, 404, -32001, 'Session not found');
        return;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST' || !isInitialize(body)) {
      rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return;
    }
    const server = buildServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports.set(id, transport);
        servers.set(id, server);
      },
      ...(options.resumableRetryMs !== undefined
        ? { eventStore: new OrderedEventStore(), retryInterval: options.resumableRetryMs }
        : {}),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) {
        transports.delete(transport.sessionId);
        servers.delete(transport.sessionId);
      }
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  const http = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) rpcError(res, 500, -32603, String(err));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    servers,
    initializeCount: () => initializes,
    async dropSession(sessionId) {
      await transports.get(sessionId)?.close();
    },
    async close() {
      for (const t of [...transports.values()]) await t.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
