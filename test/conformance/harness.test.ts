/**
 * Proves the conformance harness works on Node 20: it can run the official suite,
 * parse its checks.json, report passes, and report failures.
 *
 * The server under test is a tiny LEGACY (2025-11-25) MCP server built on
 * @modelcontextprotocol/sdk@1.32.2, run in-process with one tool.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { formatFailures, runConformance, scenarioChecks } from '../helpers/conformance.js';

function buildMcpServer(): McpServer {
  const server = new McpServer({ name: 'legacy-harness-fixture', version: '1.0.0' });
  server.registerTool('test_simple_text', { description: 'Returns simple text content' }, async () => ({
    content: [{ type: 'text', text: 'This is a simple text response for testing.' }],
  }));
  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Stateful streamable-HTTP legacy server: one McpServer + transport per session. */
async function startLegacyServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sid = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(sid) ? sid[0] : sid;
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    let transport = sessionId ? sessions.get(sessionId) : undefined;
    if (!transport) {
      if (req.method === 'POST' && !sessionId && isInitializeRequest(body)) {
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, created),
        });
        created.onclose = () => {
          if (created.sessionId) sessions.delete(created.sessionId);
        };
        await buildMcpServer().connect(created);
        transport = created;
      } else {
        res.writeHead(sessionId ? 404 : 400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: null,
            error: { code: -32000, message: sessionId ? 'Session not found' : 'Bad Request: no valid session' },
          }),
        );
        return;
      }
    }
    await transport.handleRequest(req, res, body);
  };
  const http: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      for (const tr of sessions.values()) await tr.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}

t.test('conformance harness', async (t) => {
  const server = await startLegacyServer();
  t.teardown(() => server.close());

  t.test('2025-11-25 tools-call-simple-text passes against a legacy server', async (t) => {
    const report = await runConformance({
      t,
      url: server.url,
      requirements: '2025-11-25',
      scenario: 'tools-call-simple-text',
      timeoutMs: 60_000,
      scenarioTimeoutMs: 15_000,
    });
    t.equal(report.timedOut, false, 'the CLI finished before the harness deadline');
    t.notMatch(report.stderr, /globSync/, 'the Node 20 fs hook is in effect');
    const checks = scenarioChecks(report, 'tools-call-simple-text');
    t.ok(
      checks.length > 0,
      checks.length > 0
        ? 'checks.json parsed'
        : `no checks parsed; stdout: ${report.stdout.slice(-800)} stderr: ${report.stderr.slice(-800)}`,
    );
    t.equal(report.scenarios[0]?.scored, true, 'scored at 2025-11-25');
    const main = checks.find((c) => c.id === 'tools-call-simple-text');
    t.equal(main?.status, 'SUCCESS', 'the scenario check itself succeeded');
    t.ok(report.counts.SUCCESS > 0, 'SUCCESS checks counted');
    t.equal(report.counts.FAILURE, 0, formatFailures(report) || 'no FAILURE checks');
    t.equal(report.exitCode, 0, 'CLI exit code 0');
  });

  t.test('2026-07-28 server-stateless fails against a legacy server', async (t) => {
    const report = await runConformance({
      t,
      url: server.url,
      requirements: '2026-07-28',
      scenario: 'server-stateless',
      timeoutMs: 60_000,
      scenarioTimeoutMs: 20_000,
    });
    t.equal(report.timedOut, false, 'the CLI finished before the harness deadline');
    const checks = scenarioChecks(report, 'server-stateless');
    t.ok(checks.length > 5, `server-stateless reported ${checks.length} checks`);
    t.ok(report.counts.FAILURE > 0, 'FAILURE checks reported');
    t.ok(
      report.failures.some((f) => f.scenario === 'server-stateless'),
      'failures list names the scenario',
    );
    t.equal(report.exitCode, 1, 'CLI exit code 1');
  });
});
