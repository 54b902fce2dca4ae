// Causeway in front of a server that speaks only 2026-07-28 (the modern fixture, on
// @modelcontextprotocol/server 2.x, refusing the legacy era): the era is found by one probe; a
// modern client's requests are relayed with Mcp-Method / Mcp-Name; a legacy client (SDK 1.32.2)
// gets Causeway's own legacy face: initialize from server/discover, calls translated, the
// server's input_required rounds put to it as real elicitation, sampling and roots requests,
// logs at the level it set, resources/subscribe served over subscriptions/listen, DELETE ending
// the session, a session id of another principal refused.

import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';

const upstream = await startModernServer();
const causeway = await startCauseway({
  'upstream.url': upstream.url,
  // A static credential the operator configured: it reaches a 2026 upstream as it reaches a legacy one.
  'upstream.headers': 'X-Api-Key=static-key',
  'log.level': 'warn',
  'principal.mode': 'header',
  'principal.header': 'x-user',
  'principal.hashSecret': 'modern-upstream-test-secret',
});
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

async function legacyClient(
  user = 'ada',
  capabilities: Record<string, object> = { elicitation: {}, sampling: {}, roots: {} },
): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'legacy-e2e', version: '1.0.0' }, { capabilities });
  await client.connect(new LegacyTransport(new URL(causeway.url!), { requestInit: { headers: { 'x-user': user } } }));
  return client;
}

t.test('a modern client is relayed to the modern upstream, Mcp-Method and Mcp-Name with it', async (t) => {
  const client = new Client(
    { name: 'modern-e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(causeway.url!), { requestInit: { headers: { 'x-user': 'ada' } } }),
  );
  t.teardown(() => client.close());
  const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.match(result.content, [{ type: 'text' }], 'the tool answered through Causeway');
  const headers = upstream.stats().lastHeaders;
  t.equal(headers['mcp-method'], 'tools/call');
  t.equal(headers['mcp-name'], 'test_simple_text');
  t.notOk(headers['x-user'], 'the principal header is not passed on');
  t.equal(headers['x-api-key'], 'static-key', 'upstream.headers are sent on the modern side too');
});

t.test('the era found is in the metrics', async (t) => {
  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  t.match(text, /causeway_upstream_era\{upstream="default",era="modern"\} 1/);
  t.match(text, /causeway_upstream_era\{upstream="default",era="legacy"\} 0/);
});

t.test('a legacy client initializes, lists and calls through Causeway', async (t) => {
  const client = await legacyClient();
  t.teardown(() => client.close());
  t.equal(client.getServerVersion()?.name !== undefined, true, 'serverInfo from server/discover');
  t.ok(client.getServerCapabilities()?.tools, 'tools capability from server/discover');
  const { tools } = await client.listTools();
  t.ok(
    tools.some((tool) => tool.name === 'test_simple_text'),
    'tools listed',
  );
  const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.match(result.content, [{ type: 'text' }]);
  t.notOk('resultType' in result, 'no 2026-only field reaches a legacy client');
  await client.ping();
});

t.test('input_required rounds become real requests to the legacy client, answered from its handlers', async (t) => {
  const client = await legacyClient();
  t.teardown(() => client.close());
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked.push('elicitation');
    return { action: 'accept', content: { user_name: 'Ada', name: 'Ada' } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    asked.push('sampling');
    return { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'test', stopReason: 'endTurn' };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    asked.push('roots');
    return { roots: [{ uri: 'file:///home/ada/project', name: 'project' }] };
  });
  const elicited = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
  t.match(JSON.stringify(elicited.content), /Ada/, 'the elicitation answer reached the server');
  const sampled = await client.callTool({ name: 'test_input_required_result_sampling', arguments: {} });
  t.match(JSON.stringify(sampled.content), /Paris/, 'the sampling answer reached the server');
  const rooted = await client.callTool({ name: 'test_input_required_result_list_roots', arguments: {} });
  t.match(JSON.stringify(rooted.content), /project/, 'the roots reached the server');
  t.same(asked, ['elicitation', 'sampling', 'roots']);
});

t.test('a round the legacy client declared no capability for is an error, not a hang', async (t) => {
  const client = await legacyClient('bob', {});
  t.teardown(() => client.close());
  const result = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} }).then(
    (r) => ({ ok: r }),
    (err: Error) => ({ err }),
  );
  t.ok('err' in result || ('ok' in result && result.ok.isError), 'the call fails with a reason');
});

t.test('logging/setLevel: later calls carry the level, and their log lines reach the client', async (t) => {
  const client = await legacyClient();
  t.teardown(() => client.close());
  const lines: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void lines.push(n.params.data));
  await client.setLoggingLevel('debug');
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  t.ok(lines.length >= 1, `${lines.length} log lines on the call's stream`);
});

t.test('resources/subscribe is served over subscriptions/listen on the GET stream', async (t) => {
  const client = await legacyClient();
  t.teardown(() => client.close());
  const updated: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
  await client.subscribeResource({ uri: 'test://watched-resource' });
  t.pass('subscribed');
  const { resources } = await client.listResources();
  t.ok(resources.length > 0, 'resources listed');
  t.same(
    updated.filter((u) => u !== 'test://watched-resource'),
    [],
    'nothing but the subscribed resource',
  );
});

t.test(
  'errors in the legacy era: a missing resource is -32002 with data.uri, a task-augmented call is refused',
  async (t) => {
    const client = await legacyClient('erin');
    t.teardown(() => client.close());
    const missing = await client.readResource({ uri: 'test://template//data' }).then(
      () => undefined,
      (err: { code?: number; data?: { uri?: string } }) => err,
    );
    t.equal(missing?.code, -32002, 'the legacy code for a missing resource');
    t.equal(missing?.data?.uri, 'test://template//data', 'naming the URI');
    // A 2025-11-25 task-augmented call, as a client of that era sends it.
    const res = await fetch(causeway.url!, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': (client.transport as LegacyTransport).sessionId!,
        'x-user': 'erin',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'test_simple_text', arguments: {}, task: { ttl: 60_000 } },
      }),
    });
    const body = (await res.json()) as { id: number; error?: { code: number; message: string } };
    t.equal(body.error?.code, -32601, 'refused');
    t.match(body.error?.message, /no tasks of the 2025-11-25 era/, 'with the reason');
    const { tools } = await client.listTools();
    t.ok(tools.length > 0, 'the session goes on');
  },
);

t.test('DELETE ends the session; another principal cannot use a session id', async (t) => {
  const client = await legacyClient('carol');
  const transport = client.transport as LegacyTransport;
  const sessionId = transport.sessionId!;
  t.ok(sessionId, 'a session id was minted');
  const stranger = await fetch(causeway.url!, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'x-user': 'mallory',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
  });
  t.equal(stranger.status, 404, 'another principal gets 404');
  await transport.terminateSession();
  const after = await fetch(causeway.url!, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'x-user': 'carol',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/list' }),
  });
  t.equal(after.status, 404, 'the ended session is gone');
  await client.close();
});

t.test('an answer to no ask is refused, and nothing else is touched', async (t) => {
  const client = await legacyClient('dave');
  t.teardown(() => client.close());
  const sessionId = (client.transport as LegacyTransport).sessionId!;
  const res = await fetch(causeway.url!, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'x-user': 'dave',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'cw~nobody~0~0', result: { action: 'accept' } }),
  });
  t.equal(res.status, 400);
  const { tools } = await client.listTools();
  t.ok(tools.length > 0, 'the session still works');
});

t.test(
  'a modern upstream that answers neither era, or ends its stream early: 502 or a JSON-RPC error, never a hang',
  async (t) => {
    // A server that is modern by its discover, then answers a call with an SSE stream that ends
    // before its response, and a list with HTML.
    const odd = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const msg = JSON.parse(body) as { id: number; method: string };
        if (msg.method === 'server/discover') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: msg.id,
              result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} } },
            }),
          );
        } else if (msg.method === 'tools/call') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const progress = {
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progressToken: 1, progress: 1 },
          };
          res.end(`event: message\ndata: ${JSON.stringify(progress)}\n\n`);
        } else {
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end('<html>not MCP</html>');
        }
      });
    });
    await new Promise<void>((r) => odd.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise((r) => odd.close(r)));
    const proxy = await startCauseway({
      'upstream.url': `http://127.0.0.1:${(odd.address() as AddressInfo).port}/mcp`,
      'upstream.era': 'modern',
      'log.level': 'warn',
    });
    t.teardown(() => proxy.close());
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const post = (id: number, method: string, params: object, name?: string) =>
      fetch(proxy.url!, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': method,
          ...(name ? { 'mcp-name': name } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }),
      });
    const call = await post(1, 'tools/call', { name: 'x', arguments: {} }, 'x');
    const text = await call.text();
    t.match(text, /notifications\/progress/, 'the progress that came was relayed');
    t.match(
      text,
      /"error":\{"code":-32603,"message":"The upstream ended the stream before its response"\},"id":1/,
      'then the request is answered with an error, not left hanging',
    );
    const list = await post(2, 'tools/list', {});
    t.equal(list.status, 502, 'an answer that is no JSON-RPC is 502');
    t.match(await list.json(), { id: 2, error: { code: -32603 } });
  },
);

t.test('a drain ends a relayed listen stream with the closing result, without waiting for its timeout', async (t) => {
  const server = await startModernServer();
  t.teardown(() => server.close());
  // A drain timeout no test reaches: the stream must end by the drain's own doing.
  const proxy = await startCauseway({
    'upstream.url': server.url,
    'upstream.era': 'modern',
    'drain.delayMs': 0,
    'drain.timeoutMs': 600_000,
    'log.level': 'warn',
  });
  t.teardown(() => proxy.close());
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const res = await fetch(proxy.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'L1',
      method: 'subscriptions/listen',
      params: { notifications: { toolsListChanged: true }, _meta: meta },
    }),
  });
  t.equal(res.status, 200);
  const reader = res.body!.getReader();
  let text = '';
  const decoder = new TextDecoder();
  const read = async (until: RegExp) => {
    while (!until.test(text)) {
      const { value, done } = await reader.read();
      if (done) return;
      text += decoder.decode(value, { stream: true });
    }
  };
  await read(/subscriptions\/acknowledged/);
  t.match(text, /notifications\/subscriptions\/acknowledged/, 'the upstream acknowledged the relayed listen');
  const drained = proxy.app.drain();
  await read(/"id":"L1"/);
  t.match(
    text,
    /"id":"L1","result":\{"resultType":"complete","_meta":\{"io.modelcontextprotocol\/subscriptionId":"L1"\}\}/,
    'ended with the closing result',
  );
  await drained;
  t.pass('the drain finished');
});
