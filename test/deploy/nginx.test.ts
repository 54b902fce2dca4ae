// deploy/nginx/mcp-routing.conf in front of two Causeway pools, on the real nginx binary: each
// request lands on the pool its Mcp-Method / Mcp-Name headers name, with no affinity and without
// nginx reading the body. The shipped file is used as is but for its addresses (listen port and
// the upstream `server` lines), which the test points at ports chosen at run time. Each pool is
// one Causeway in front of its own labelled legacy fixture; where a request went is read from
// the fixtures' tool-call counts, the Causeways' /metrics and nginx's access log ($upstream_addr, $connection).
// A missing nginx binary fails the test (NGINX=/path/to/nginx overrides the lookup).

import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startLegacyServer, type LegacyServerHandle } from '../fixtures/legacy-server.js';
import { startCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { startNginx } from '../helpers/nginx.js';
import { until } from '../helpers/until.js';
import { Client as UndiciClient } from 'undici';
import { modernBody, modernHeaders, post, toolCall } from '../e2e/wire.js';

const SHIPPED = fileURLToPath(new URL('../../../deploy/nginx/mcp-routing.conf', import.meta.url));
const shipped = readFileSync(SHIPPED, 'utf8');

// --- the two pools -----------------------------------------------------------------------------

interface Pool {
  fixture: LegacyServerHandle;
  causeway: RunningCauseway;
}

async function pool(label: string): Promise<Pool> {
  const fixture = await startLegacyServer({ label });
  const causeway = await startCauseway({ 'upstream.url': fixture.url, 'log.level': 'warn' });
  t.teardown(async () => {
    await causeway.close();
    await fixture.close();
  });
  return { fixture, causeway };
}

const search = await pool('search');
const general = await pool('general');

// --- nginx ------------------------------------------------------------------------------------

/** The shipped file with its placeholder addresses replaced; each must be there as many times as shipped. */
function template(conf: string, addresses: Record<string, string>, expected: Record<string, number>): string {
  let out = conf;
  for (const [placeholder, address] of Object.entries(addresses)) {
    const n = out.split(placeholder).length - 1;
    if (n !== expected[placeholder])
      throw new Error(`${placeholder} appears ${n} times in ${SHIPPED}, expected ${expected[placeholder]}`);
    out = out.split(placeholder).join(address);
  }
  return out;
}

const nginx = await startNginx(t, (port) =>
  template(
    shipped,
    {
      'listen 8080;': `listen 127.0.0.1:${port};`,
      'server 127.0.0.1:8081;': `server 127.0.0.1:${search.causeway.port};`,
      'server 127.0.0.1:8082;': `server 127.0.0.1:${general.causeway.port};`,
    },
    { 'listen 8080;': 1, 'server 127.0.0.1:8081;': 2, 'server 127.0.0.1:8082;': 2 },
  ),
);
const nginxPort = nginx.port;
const ACCESS_LOG = nginx.accessLog;
const MCP = `http://127.0.0.1:${nginxPort}/mcp`;

// --- evidence ---------------------------------------------------------------------------------

/** Sum of the samples of `metric` on `c`'s admin port whose labels include `labels`. */
async function metric(c: RunningCauseway, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${c.adminUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** Modern requests of `method` (and tool `name`) each Causeway answered. */
async function answered(method: string, name?: string): Promise<{ search: number; general: number }> {
  const labels: Record<string, string> = name === undefined ? { method } : { method, name };
  const metricName = name === undefined ? 'causeway_requests_total' : 'causeway_modern_requests_total';
  if (name === undefined) labels['era'] = 'modern';
  return {
    search: await metric(search.causeway, metricName, labels),
    general: await metric(general.causeway, metricName, labels),
  };
}

const calls = (tool: string) => ({
  search: search.fixture.stats().toolCalls[tool] ?? 0,
  general: general.fixture.stats().toolCalls[tool] ?? 0,
});

const diff = (after: { search: number; general: number }, before: { search: number; general: number }) => ({
  search: after.search - before.search,
  general: after.general - before.general,
});

/**
 * The access-log lines of `method` ('-': none sent) written since `from` (a byte offset), as
 * [name, upstream port, status, client connection number], once there are `count` of them (nginx logs just after it
 * answers).
 */
async function routed(from: number, method: string, count: number): Promise<string[][]> {
  const read = () =>
    readFileSync(ACCESS_LOG, 'utf8')
      .slice(from)
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('|'))
      .filter(([m]) => m === method)
      .map(([, name, addr, status, conn]) => [name!, addr!.replace(/^127\.0\.0\.1:/, ''), status!, conn!]);
  // Fewer than `count` by then: what there is, for the caller's assertion to show.
  return until(
    () => {
      const lines = read();
      return lines.length >= count && lines;
    },
    { what: `${count} access-log lines of ${method}` },
  ).catch(() => read());
}
const logSize = () => (existsSync(ACCESS_LOG) ? readFileSync(ACCESS_LOG, 'utf8').length : 0);

const SEARCH_PORT = String(search.causeway.port);
const GENERAL_PORT = String(general.causeway.port);

type Caps = ConstructorParameters<typeof Client>[1] extends infer O
  ? O extends { capabilities?: infer C }
    ? C
    : never
  : never;

async function modernClient(capabilities: Caps = {}, setup: (c: Client) => void = () => undefined): Promise<Client> {
  const client = new Client(
    { name: 'nginx-e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities },
  );
  setup(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP)));
  t.teardown(() => client.close());
  return client;
}

// --- the cases --------------------------------------------------------------------------------

t.test('the shipped config routes by headers only: maps over $http_mcp_*, nothing that reads a body', async (t) => {
  const code = shipped.replace(/#.*$/gm, '');
  t.match(code, /map \$http_mcp_name \$causeway_tool_pool/);
  t.match(code, /map \$http_mcp_method \$causeway_pool/);
  t.match(code, /proxy_pass http:\/\/\$causeway_pool;/);
  for (const reads of [/\bmirror\b/, /\bjs_\w+/, /\blua\w*/, /\$request_body/, /\bperl\b/, /\bsub_filter\b/]) {
    t.notMatch(code, reads, `no ${reads.source}`);
  }
  for (const affinity of [/\bip_hash\b/, /^\s*hash\b/m, /\bsticky\b/, /\$cookie_/, /add_header\s+Set-Cookie/i]) {
    t.notMatch(code, affinity, `no affinity: ${affinity.source}`);
  }
  t.match(code, /proxy_http_version 1\.1;/);
  t.match(code, /proxy_set_header Connection "";/);
  t.match(code, /proxy_buffering off;/);
  const upstreamKeepalive = [...code.matchAll(/keepalive_timeout (\d+)s;/g)].map((m) => Number(m[1]));
  t.ok(
    upstreamKeepalive.length >= 3 && upstreamKeepalive.every((s) => s * 1000 < 65_000),
    'nginx closes idle connections before Causeway (65 s)',
  );
});

t.test(
  'the real client: tools/call search_* on the search pool, ' +
    'every other tool on the general pool, one call at a time',
  async (t) => {
    const client = await modernClient();
    const from = logSize();
    const expected: Array<['search_tickets' | 'echo', 'search' | 'general']> = [
      ['search_tickets', 'search'],
      ['echo', 'general'],
      ['search_tickets', 'search'],
      ['search_tickets', 'search'],
      ['echo', 'general'],
    ];
    for (const [tool, where] of expected) {
      const before = { tickets: calls('search_tickets'), echo: calls('echo') };
      const r = await client.callTool({
        name: tool,
        arguments: tool === 'echo' ? { text: 'hi' } : { query: 'printer' },
      });
      t.same(r.content, [{ type: 'text', text: tool === 'echo' ? 'hi' : 'tickets matching printer' }]);
      const moved = diff(calls(tool), tool === 'echo' ? before.echo : before.tickets);
      t.same(
        moved,
        where === 'search' ? { search: 1, general: 0 } : { search: 0, general: 1 },
        `${tool} reached the ${where} pool's server`,
      );
    }
    t.same(
      (await routed(from, 'tools/call', expected.length)).map(([name, port]) => [name, port]),
      expected.map(([tool, where]) => [tool, where === 'search' ? SEARCH_PORT : GENERAL_PORT]),
      'nginx sent each call to the Causeway its Mcp-Name names',
    );
    const tickets = await answered('tools/call', 'search_tickets');
    const echo = await answered('tools/call', 'echo');
    t.equal(echo.search, 0, 'the search Causeway never answered echo');
    t.equal(tickets.general, 0, 'the general Causeway never answered search_tickets');
    t.ok(tickets.search >= 3 && echo.general >= 2, 'each Causeway counted its own calls');
  },
);

t.test('server/discover and tools/list go to either pool (round robin over both)', async (t) => {
  const client = await modernClient();
  const before = { discover: await answered('server/discover'), list: await answered('tools/list') };
  // In runs of their own: round robin alternates over the one `causeway_any` group.
  for (let i = 0; i < 4; i++) t.ok((await client.discover()).capabilities.tools, 'tools advertised');
  for (let i = 0; i < 4; i++) {
    const list = await client.listTools();
    t.ok(
      list.tools.some((x) => x.name === 'search_tickets'),
      'both pools list the same tools',
    );
  }
  const discover = diff(await answered('server/discover'), before.discover);
  const list = diff(await answered('tools/list'), before.list);
  t.equal(discover.search + discover.general, 4);
  t.equal(list.search + list.general, 4);
  t.ok(discover.search > 0 && discover.general > 0, `discover reached both pools (${JSON.stringify(discover)})`);
  t.ok(list.search > 0 && list.general > 0, `tools/list reached both pools (${JSON.stringify(list)})`);
});

t.test(
  'no affinity: no cookie, and requests on one keep-alive connection each go where their own headers say',
  async (t) => {
    const connection = new UndiciClient(`http://127.0.0.1:${nginxPort}`, { pipelining: 1 });
    t.teardown(() => connection.close());
    const from = logSize();
    const before = calls('search_tickets');
    const a = toolCall('search_tickets', { query: 'disk' }, 1);
    const b = toolCall('echo', { text: 'x' }, 2);
    for (const req of [a, b, a, b]) {
      const r = await connection.request({
        method: 'POST',
        path: '/mcp',
        headers: req.headers,
        body: JSON.stringify(req.body),
      });
      t.equal(r.statusCode, 200);
      t.equal(r.headers['set-cookie'], undefined, 'no cookie handed out');
      await r.body.text();
    }
    t.same(diff(calls('search_tickets'), before), { search: 2, general: 0 });
    const lines = await routed(from, 'tools/call', 4);
    t.equal(new Set(lines.map((l) => l[3])).size, 1, 'all four came on one client connection');
    t.same(
      lines.map(([name, port]) => [name, port]),
      [
        ['search_tickets', SEARCH_PORT],
        ['echo', GENERAL_PORT],
        ['search_tickets', SEARCH_PORT],
        ['echo', GENERAL_PORT],
      ],
    );
  },
);

t.test(
  'nginx routes on the headers, never the body: a body that ' +
    'disagrees lands where the headers say and is refused there',
  async (t) => {
    const before = { tickets: calls('search_tickets'), echo: calls('echo') };
    const rejected = async () => ({
      search: await metric(search.causeway, 'causeway_requests_total', { era: 'rejected' }),
      general: await metric(general.causeway, 'causeway_requests_total', { era: 'rejected' }),
    });
    const refusedBefore = await rejected();
    const from = logSize();
    // Headers name search_tickets, the body calls echo.
    const r = await post(
      MCP,
      modernBody('tools/call', { name: 'echo', arguments: { text: 'sneaky' } }, 7),
      modernHeaders('tools/call', 'search_tickets'),
    );
    t.equal(r.status, 400);
    t.equal(r.json?.error?.code, -32020, 'header mismatch, from Causeway');
    t.same(
      (await routed(from, 'tools/call', 1)).map((l) => l.slice(0, 3)),
      [['search_tickets', SEARCH_PORT, '400']],
      'routed by Mcp-Name alone',
    );
    t.same(
      [diff(calls('search_tickets'), before.tickets), diff(calls('echo'), before.echo)],
      [
        { search: 0, general: 0 },
        { search: 0, general: 0 },
      ],
      'no upstream ran either tool',
    );
    t.same(diff(await rejected(), refusedBefore), { search: 1, general: 0 }, 'the search Causeway refused it');
  },
);

t.test('a request with no Mcp-Method (a legacy client) takes the general pool', async (t) => {
  const from = logSize();
  const before = general.fixture.stats().initializeCount;
  const r = await post(
    MCP,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'legacy', version: '1' } },
    },
    { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  );
  t.equal(r.status, 200);
  t.same(
    (await routed(from, '-', 1)).map(([, port]) => port),
    [GENERAL_PORT],
    'nginx sent it to the general pool',
  );
  t.equal(general.fixture.stats().initializeCount, before + 1, 'the general pool server saw the initialize');
});

t.test('a multi-round call keeps its Mcp-Name on every retry, so every round lands on the same pool', async (t) => {
  const TOOL = 'test_input_required_result_multi_round';
  const answers: Array<Record<string, string>> = [{ name: 'Ada' }, { color: 'teal' }];
  const client = await modernClient({ elicitation: { form: {} } }, (c) =>
    c.setRequestHandler('elicitation/create', async () => ({ action: 'accept' as const, content: answers.shift()! })),
  );
  const from = logSize();
  const r = await client.callTool({ name: TOOL, arguments: {} });
  t.same(r.content, [{ type: 'text', text: 'Multi-round complete for Ada who likes teal' }]);
  const rounds = await routed(from, 'tools/call', 3);
  t.equal(rounds.length, 3, 'the first request and two retries');
  t.ok(
    rounds.every(([name, port]) => name === TOOL && port === GENERAL_PORT),
    'each round named the tool and went to the general pool',
  );
  t.same(calls(TOOL), { search: 0, general: 1 }, 'one held call on one upstream');
  t.equal(
    await metric(search.causeway, 'causeway_modern_requests_total', { name: TOOL }),
    0,
    'the search Causeway saw no round',
  );
});
