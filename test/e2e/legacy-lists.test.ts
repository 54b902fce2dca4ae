// A legacy client (@modelcontextprotocol/sdk 1.32.2) is shown only what its token may call, as a
// modern one is: tools and templates lists from a Streamable HTTP upstream answering JSON or SSE
// (with a log notification before the list, passed on), and from stdio and HTTP+SSE upstreams; a list too
// large to read within maxResponseBytes is an error, never the list unfiltered; a token that may
// see everything gets the upstream's answer as it is, unread. Real oidc-provider tokens.

import t from 'tap';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { jwtFace, startAuthorizationServer } from '../helpers/authorization-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { freePort } from '../helpers/redis.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));
/** Above the fixture's own tools list (about 7.5 kB), below one with 300 more tools (about 55 kB). */
const MAX_RESPONSE_BYTES = 16_384;

const port = await freePort();
const origin = `http://127.0.0.1:${port}`;
const paths = ['/json', '/sse', '/stdio', '/http-sse', '/big-json', '/big-sse'];

const servers = {
  json: await startLegacyServer({ jsonResponse: true }),
  sse: await startLegacyServer({ logLists: true }),
  'http-sse': await startLegacyServer({ transport: 'sse' }),
  'big-json': await startLegacyServer({ jsonResponse: true, manyTools: 300 }),
  'big-sse': await startLegacyServer({ manyTools: 300 }),
};
for (const s of Object.values(servers)) t.teardown(() => s.close());

const as = await startAuthorizationServer(t, {
  resources: Object.fromEntries(paths.map((p) => [origin + p, 'jwt' as const])),
  scopes: ['mcp', 'mcp:admin'],
  clients: ['alice'],
});
const causeway = await startCauseway({
  ...jwtFace(as, port, `${origin}/json`),
  'auth.rules': JSON.stringify({
    '*': ['mcp'],
    'tools/call test_*': ['mcp:admin'],
    'resources/read test://template/*': ['mcp:admin'],
  }),
  upstreams: JSON.stringify({
    json: { url: servers.json.url },
    sse: { url: servers.sse.url },
    stdio: { transport: 'stdio', command: process.execPath, args: [FIXTURE, '--stdio'] },
    'http-sse': { transport: 'sse', url: servers['http-sse'].url },
    'big-json': { url: servers['big-json'].url, maxResponseBytes: MAX_RESPONSE_BYTES },
    'big-sse': { url: servers['big-sse'].url, maxResponseBytes: MAX_RESPONSE_BYTES },
  }),
  mounts: JSON.stringify(Object.fromEntries(paths.map((p) => [p, { upstreams: [p.slice(1)] }]))),
});
t.teardown(() => causeway.close());

interface Peer {
  client: Client;
  /** The content type of each answer to a POST, by the JSON-RPC method it carried. */
  answeredAs: Map<string, string>;
  logs: unknown[];
}

async function legacyClient(path: string, scope: string): Promise<Peer> {
  const token = await as.token({ client: 'alice', resource: origin + path, scope });
  const answeredAs = new Map<string, string>();
  const tap = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init);
    const method = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }).method : undefined;
    if (method !== undefined) answeredAs.set(method, (res.headers.get('content-type') ?? '').split(';')[0]!);
    return res;
  };
  const transport = new StreamableHTTPClientTransport(new URL(path, origin), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    fetch: tap,
  });
  const client = new Client({ name: 'legacy-lists', version: '1.0.0' });
  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params.data));
  await client.connect(transport);
  t.teardown(() => client.close());
  return { client, answeredAs, logs };
}

const toolNames = async (peer: Peer) => (await peer.client.listTools()).tools.map((x) => x.name);
const templates = async (peer: Peer) =>
  (await peer.client.listResourceTemplates()).resourceTemplates.map((x) => x.uriTemplate);

for (const [path, answer] of [
  ['/json', 'application/json'],
  ['/sse', 'text/event-stream'],
  ['/stdio', undefined],
  ['/http-sse', undefined],
] as const) {
  t.test(`${path}: a legacy client sees only the tools and templates its token may use`, async (t) => {
    const plain = await legacyClient(path, 'mcp');
    const names = await toolNames(plain);
    t.ok(names.includes('echo'), 'a tool it may call is listed');
    t.same(
      names.filter((n) => n.startsWith('test_')),
      [],
      'no tool it may not call',
    );
    t.same(await templates(plain), [], 'no template whose reads it is refused');
    if (answer !== undefined)
      t.equal(plain.answeredAs.get('tools/list'), answer, `the upstream's answer was ${answer}`);
    await t.rejects(
      plain.client.callTool({ name: 'test_simple_text', arguments: {} }),
      { code: 403 },
      'and a call of one it was not shown is refused',
    );

    const admin = await legacyClient(path, 'mcp mcp:admin');
    t.ok((await toolNames(admin)).includes('test_simple_text'), 'a token with the scope sees it');
    t.same(await templates(admin), ['test://template/{id}/data']);
  });
}

t.test('/sse: the notifications on a filtered list stream reach the client', async (t) => {
  const plain = await legacyClient('/sse', 'mcp');
  const before = plain.logs.length;
  await toolNames(plain);
  t.same(plain.logs.slice(before), ['listing tools'], 'the log line sent before the list');
});

for (const path of ['/big-json', '/big-sse']) {
  t.test(`${path}: a list past maxResponseBytes is an error, not the list unfiltered`, async (t) => {
    const plain = await legacyClient(path, 'mcp');
    await t.rejects(
      plain.client.listTools(),
      path === '/big-json'
        ? { code: 502, message: /Upstream response exceeds 16384 bytes/ }
        : { code: -32603, message: /larger than 16384 bytes/ },
    );
    t.same(await templates(plain), [], 'a list within it is filtered still');
    const admin = await legacyClient(path, 'mcp mcp:admin');
    const names = await toolNames(admin);
    t.ok(
      names.includes('test_simple_text') && names.includes('tool_0300'),
      'nothing to hide: the whole answer passes, unread and unbounded',
    );
  });
}

t.test('a legacy initialize without a token: 401 naming the scope every request needs', async (t) => {
  const res = await fetch(`${origin}/json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    }),
  });
  await res.body?.cancel();
  t.equal(res.status, 401);
  t.match(
    res.headers.get('www-authenticate'),
    /^Bearer scope="mcp", resource_metadata="[^"]+", DPoP scope="mcp", algs=/,
  );
});
