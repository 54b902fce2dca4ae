// `causeway doctor` as a user runs it: `node dist/src/main.js doctor ...` against real servers,
// the legacy fixture over Streamable HTTP, HTTP+SSE and stdio, the 2026 fixture, the legacy
// fixture behind a front that wants a token, and a port where nothing listens. Each run's exit
// status and report are checked, and so is what it left behind: no tool called, no session open.

import t, { type Test } from 'tap';
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLegacyServer } from './fixtures/legacy-server.js';
import { startModernServer } from './fixtures/modern-server.js';
import { alive, exitOf, spawnOwned } from './helpers/processes.js';
import { freePort } from './helpers/redis.js';
import { until } from './helpers/until.js';

const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
const LEGACY_FIXTURE = fileURLToPath(new URL('./fixtures/legacy-server.js', import.meta.url));
const MODERN_FIXTURE = fileURLToPath(new URL('./fixtures/modern-server.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The report's fields the tests read (the README documents them all). */
interface JsonReport {
  status: string;
  exitCode: number;
  transport?: { found: string; how: string };
  era?: { found: string };
  auth?: {
    required: boolean;
    credentials: string;
    resource?: string;
    authorizationServers?: string[];
    challenge?: string;
  };
  server?: { name?: string; protocolVersion?: string };
  session?: { sessionful: boolean; getStream: string; ended: boolean };
  lists?: Record<string, { count: number; complete: boolean }>;
  tools?: Array<{ name: string; taskSupport: string; paramHeaders: unknown }>;
  faces?: { modernClients: string; legacyClients: string };
  problems: Array<{ blocking: boolean; kind: string; message: string }>;
}

async function doctor(t: Test, args: string[]): Promise<Run> {
  const child = spawnOwned(process.execPath, [MAIN, 'doctor', ...args], { t, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const { code } = await exitOf(child);
  return { code, stdout, stderr };
}

function parsed(t: Test, run: Run): JsonReport {
  const report = JSON.parse(run.stdout) as JsonReport;
  t.equal(report.exitCode, run.code, 'the JSON states the exit status the process ended with');
  return report;
}

t.test(
  'a legacy Streamable HTTP server: ready, legacy, sessionful, counted; nothing called, nothing left open',
  async (t) => {
    const server = await startLegacyServer();
    t.teardown(() => server.close());
    const run = await doctor(t, [server.url, '--json']);
    t.equal(run.code, 0, run.stderr);
    const report = parsed(t, run);
    t.equal(report.status, 'ready');
    t.equal(report.transport?.found, 'streamable-http');
    t.equal(report.era?.found, 'legacy');
    t.equal(report.auth?.required, false);
    t.equal(report.server?.name, 'causeway-legacy-fixture');
    t.same(report.session, {
      sessionful: true,
      how: 'initialize returned an Mcp-Session-Id',
      getStream: 'served',
      getStreamHow: 'GET answered text/event-stream',
      ended: true,
    });
    for (const list of ['tools', 'prompts', 'resources', 'resourceTemplates']) {
      t.ok(report.lists?.[list]?.complete && report.lists[list]!.count > 0, `${list} counted`);
    }
    t.equal(report.tools?.length, report.lists?.tools?.count, 'one finding per tool');
    t.equal(report.tools?.find((x) => x.name === 'test_tool_with_task')?.taskSupport, 'required');
    t.match(report.faces?.modernClients, /translated face over pooled sessions/);
    t.match(report.faces?.legacyClients, /passed through/);
    t.same(server.stats().toolCalls, {}, 'no tool was called');
    for (const method of ['tools/call', 'prompts/get', 'resources/read'])
      t.notOk(server.stats().requestsByMethod[method], `no ${method}`);
    await until(() => server.stats().sessionsOpen === 0, { what: 'every session the doctor opened to be ended' });
    t.equal(server.stats().sessionsDeleted, server.stats().initializeCount, 'each session it opened was DELETEd');
  },
);

t.test('an era setting the server contradicts blocks, naming the setting to change', async (t) => {
  const server = await startLegacyServer();
  t.teardown(() => server.close());
  const run = await doctor(t, [server.url, '--upstream.era', 'modern', '--json']);
  t.equal(run.code, 1);
  const report = parsed(t, run);
  t.same(
    report.problems.filter((p) => p.blocking).map((p) => p.kind),
    ['era_mismatch'],
  );
  t.match(report.problems[0]?.message, /upstream\.era is modern, but the server speaks the legacy protocol/);
  await until(() => server.stats().sessionsOpen === 0, { what: 'the session the doctor opened to be ended' });
});

t.test('a 2026 server: ready, modern, relayed', async (t) => {
  const server = await startModernServer();
  t.teardown(() => server.close());
  const run = await doctor(t, [server.url, '--json']);
  t.equal(run.code, 0, run.stderr);
  const report = parsed(t, run);
  t.equal(report.era?.found, 'modern');
  t.equal(report.transport?.found, 'streamable-http');
  t.equal(report.server?.name, 'causeway-modern-fixture');
  t.equal(report.server?.protocolVersion, '2026-07-28');
  t.equal(report.session?.sessionful, false);
  t.ok((report.lists?.tools?.count ?? 0) > 0, 'its tools counted');
  t.match(report.faces?.modernClients, /relayed/);
  t.match(report.faces?.legacyClients, /translated legacy face/);
});

t.test('an HTTP+SSE server: the transport probe finds sse', async (t) => {
  const server = await startLegacyServer({ transport: 'sse' });
  t.teardown(() => server.close());
  const run = await doctor(t, [server.url]);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /^transport: +sse \(/m);
  t.match(run.stdout, /^era: +legacy/m);
  t.match(run.stdout, /HTTP\+SSE connection per pooled session/);
  t.match(run.stdout, /^READY \(exit 0\)$/m);
  t.same(server.stats().toolCalls, {}, 'no tool was called');
});

t.test('a stdio server, started as Causeway starts it', async (t) => {
  const stdio = ['--upstream.transport', 'stdio', '--upstream.command', process.execPath];
  const run = await doctor(t, [...stdio, '--upstream.args', `${LEGACY_FIXTURE},--stdio`]);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /^transport: +stdio/m);
  t.match(run.stdout, /^era: +legacy \(server\/discover on the child's stdin/m);
  t.match(run.stdout, /^lists: +tools \d+, prompts \d+/m);
  t.match(run.stdout, /a child process per client session/);
});

t.test('a 2026 stdio server: modern, and its child stopped', async (t) => {
  const pidFile = join(tmpdir(), `causeway-doctor-${process.pid}.pids`);
  t.teardown(() => rmSync(pidFile, { force: true }));
  const stdio = ['--upstream.transport', 'stdio', '--upstream.command', process.execPath];
  const run = await doctor(t, [
    ...stdio,
    '--upstream.args',
    `${MODERN_FIXTURE},--stdio,--pid-file,${pidFile}`,
    '--json',
  ]);
  t.equal(run.code, 0, run.stderr);
  t.equal(parsed(t, run).era?.found, 'modern');
  const pids = readFileSync(pidFile, 'utf8').split('\n').filter(Boolean).map(Number);
  t.ok(pids.length > 0, 'a child was started');
  await until(() => !pids.some(alive), { what: 'every child the doctor started to be gone' });
});

/** The legacy fixture behind a front that wants `Bearer good`, with a 401 naming its metadata document. */
async function protectedServer(t: Test): Promise<string> {
  const inner = await startLegacyServer();
  t.teardown(() => inner.close());
  const front = http.createServer((req, res) => {
    const origin = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
    const metadata = `${origin}/.well-known/oauth-protected-resource/mcp`;
    if (req.url === '/.well-known/oauth-protected-resource/mcp') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resource: `${origin}/mcp`, authorization_servers: ['https://auth.example.com'] }));
      return;
    }
    if (req.headers.authorization !== 'Bearer good') {
      res.writeHead(401, {
        'www-authenticate': `Bearer resource_metadata="${metadata}"`,
        'content-type': 'application/json',
      });
      res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized"}}');
      return;
    }
    const headers = { ...req.headers, host: `127.0.0.1:${inner.port}` };
    const onward = http.request(
      { host: '127.0.0.1', port: inner.port, path: req.url, method: req.method, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        // A GET stream's headers at once, as the server sent them, not with its first event.
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    onward.on('error', () => res.destroy());
    req.pipe(onward);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => front.close(() => resolve())));
  t.teardown(() => front.closeAllConnections());
  return `http://127.0.0.1:${(front.address() as AddressInfo).port}/mcp`;
}

t.test('a server that wants a token: blocked naming auth without one, ready with it', async (t) => {
  const url = await protectedServer(t);
  const without = await doctor(t, [url, '--json']);
  t.equal(without.code, 1, 'exit 1: a blocking problem');
  const report = parsed(t, without);
  t.equal(report.status, 'blocked');
  t.equal(report.auth?.required, true);
  t.equal(report.auth?.credentials, 'none');
  t.match(report.auth?.challenge, /resource_metadata=/);
  t.equal(report.auth?.resource, url);
  t.same(report.auth?.authorizationServers, ['https://auth.example.com']);
  t.same(
    report.problems.filter((p) => p.blocking).map((p) => p.kind),
    ['auth_required'],
  );
  const withToken = await doctor(t, [url, '--upstream.headers', 'authorization=Bearer good']);
  t.equal(withToken.code, 0, withToken.stdout);
  t.match(withToken.stdout, /^auth: +not required \(credentials given: header\)/m);
  t.match(withToken.stdout, /^GET stream: served/m);
  t.match(withToken.stdout, /^READY \(exit 0\)$/m);
});

/** A bare session-less legacy server whose tools/list holds a tool with a bad annotation and a name listed twice. */
async function oddToolsServer(t: Test): Promise<string> {
  const schema = (type: string) => ({ type: 'object', properties: { n: { type, 'x-mcp-header': 'N' } } });
  const tools = [
    { name: 'fine', inputSchema: schema('string') },
    { name: 'numeric', inputSchema: schema('number') },
    { name: 'twin', inputSchema: schema('string') },
    { name: 'twin', inputSchema: schema('string') },
  ];
  const results: Record<string, unknown> = {
    initialize: {
      protocolVersion: '2025-11-25',
      capabilities: { tools: {} },
      serverInfo: { name: 'odd', version: '1' },
    },
    'tools/list': { tools },
  };
  const server = http.createServer(async (req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    let body = '';
    for await (const chunk of req) body += String(chunk);
    const msg = JSON.parse(body) as { id?: number | string; method: string };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const result = results[msg.method];
    const answer = result ? { result } : { error: { code: -32601, message: 'Method not found' } };
    res.writeHead(result ? 200 : 400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...answer }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

t.test('tools Causeway cannot route, or whose annotations give no headers: named, and why', async (t) => {
  const run = await doctor(t, [await oddToolsServer(t), '--json']);
  t.equal(run.code, 1, 'a name listed twice blocks');
  const report = parsed(t, run);
  const blockers = report.problems.filter((p) => p.blocking);
  t.same(
    blockers.map((p) => p.kind),
    ['unroutable_tool'],
  );
  t.match(blockers[0]?.message, /tool twin is listed twice/);
  const warned = report.problems.filter((p) => !p.blocking).map((p) => p.message);
  t.ok(
    warned.some((m) => /^tool numeric: .*"number" property/.test(m)),
    'the tool whose annotation gives no header is named with why',
  );
  t.same(report.tools?.find((x) => x.name === 'fine')?.paramHeaders, ['Mcp-Param-N']);
});

t.test('nothing listening: exit 2, said so', async (t) => {
  const port = await freePort();
  const run = await doctor(t, [`http://127.0.0.1:${port}/mcp`, '--upstream.connectTimeoutMs', '2000']);
  t.equal(run.code, 2);
  t.match(run.stdout, /^BLOCKING: cannot reach http:\/\/127\.0\.0\.1:\d+\/mcp/m);
  t.match(run.stdout, /^UNREACHABLE \(exit 2\)$/m);
});

t.test('bad flags: exit 2 with the loader’s words and the usage', async (t) => {
  const run = await doctor(t, ['http://127.0.0.1:1/mcp', '--upstream.transport', 'carrier-pigeon']);
  t.equal(run.code, 2);
  t.match(run.stderr, /upstream\.transport/);
  t.match(run.stderr, /Usage: causeway doctor/);
});
