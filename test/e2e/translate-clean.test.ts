// The translated legacy face is clean: a legacy client (SDK 1.32.2) in front of the 2026 fixture
// sends every legacy method it has through Causeway, and every message it receives (the
// initialize answer, each result and error, each notification and server->client request, on
// the POST streams and on the GET stream) is read raw, before the SDK's schemas see it. None may
// carry a 2026-only key: no `io.modelcontextprotocol/*` key in any `_meta`, no `resultType`,
// `ttlMs` or `cacheScope`. Widely used legacy clients turn a result's `_meta` into content shown
// to a model, so a 2026 server's serverInfo there became words the server never said. A tool's
// content is what the server answered, field for field.

import t from 'tap';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CompleteResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { legacyMessage } from '../../src/translate/clean.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { until } from '../helpers/until.js';
import { modernBody, modernHeaders, type JsonObject } from './wire.js';

// Cache hints on every list and read, so the 2026 results carry ttlMs and cacheScope to leave out.
const hint = { ttlMs: 60_000, cacheScope: 'public' as const };
const upstream = await startModernServer({
  cacheHints: {
    'tools/list': hint,
    'prompts/list': hint,
    'resources/list': hint,
    'resources/templates/list': hint,
    'resources/read': hint,
  },
});
const causeway = await startCauseway({
  'upstream.url': upstream.url,
  'log.level': 'warn',
  'principal.mode': 'header',
  'principal.header': 'x-user',
  'principal.hashSecret': 'translate-clean-test-secret',
});
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

/** Keys no legacy message has, wherever they stand. */
const MODERN_FIELDS = new Set(['resultType', 'ttlMs', 'cacheScope']);

/** Where a message carries a 2026-only key: a reserved `_meta` key, or a 2026 result field. */
function modernKeys(value: unknown, path: string, found: string[]): string[] {
  if (Array.isArray(value)) value.forEach((v, i) => modernKeys(v, `${path}[${i}]`, found));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (MODERN_FIELDS.has(k)) found.push(`${path}.${k}`);
      if (k === '_meta' && v !== null && typeof v === 'object') {
        for (const mk of Object.keys(v)) {
          if (mk.startsWith('io.modelcontextprotocol/')) found.push(`${path}._meta["${mk}"]`);
        }
      }
      modernKeys(v, `${path}.${k}`, found);
    }
  }
  return found;
}

/** A legacy client whose transport keeps every message it receives, raw, before the SDK parses it. */
async function recordingClient(user: string): Promise<{ client: LegacyClient; seen: JSONRPCMessage[] }> {
  const seen: JSONRPCMessage[] = [];
  const transport = new LegacyTransport(new URL(causeway.url!), { requestInit: { headers: { 'x-user': user } } });
  let handler: ((m: JSONRPCMessage, extra?: unknown) => void) | undefined;
  // The SDK's Client sets its handler once, at connect: each message is kept before it gets it.
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler,
    set: (fn: typeof handler) => {
      handler =
        fn &&
        ((m: JSONRPCMessage, extra?: unknown) => {
          seen.push(structuredClone(m));
          fn(m, extra);
        });
    },
  });
  const client = new LegacyClient({ name: 'legacy-clean', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  await client.connect(transport);
  return { client, seen };
}

/** The last response the client received: the answer to the call just awaited. */
function lastResult(seen: JSONRPCMessage[]): JsonObject {
  const responses = seen.filter((m) => 'id' in m && 'result' in m) as Array<{ result: JsonObject }>;
  return responses[responses.length - 1]!.result;
}

/** A legacy request POSTed as a 2025-11-25 client sends it: the messages of its answer, JSON or SSE. */
async function rawPost(sessionId: string, user: string, body: JsonObject): Promise<JSONRPCMessage[]> {
  const res = await fetch(causeway.url!, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'x-user': user,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) return [JSON.parse(text) as JSONRPCMessage];
  return text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => JSON.parse(l.slice(5)) as JSONRPCMessage);
}

/** The fixture's own answer to a tools/call, asked directly in the 2026 era. */
async function directCall(name: string): Promise<JsonObject> {
  const body = JSON.stringify(modernBody('tools/call', { name, arguments: {} }));
  const res = await fetch(upstream.url, { method: 'POST', headers: modernHeaders('tools/call', name), body });
  return ((await res.json()) as { result: JsonObject }).result;
}

t.test('every legacy method and notification through the translated face carries no 2026-only key', async (t) => {
  const { client, seen } = await recordingClient('ada');
  t.teardown(() => client.close());
  const serverName = client.getServerVersion()?.name;
  t.equal(serverName, 'causeway-modern-fixture', "initialize's serverInfo is the server's, from server/discover");

  const heard = { message: 0, progress: 0, tools: 0, prompts: 0, updated: 0 };
  client.setNotificationHandler(LoggingMessageNotificationSchema, () => void heard.message++);
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.tools++);
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => void heard.prompts++);
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, () => void heard.updated++);
  const accept = { action: 'accept' as const, content: { user_name: 'Ada', name: 'Ada' } };
  client.setRequestHandler(ElicitRequestSchema, async () => accept);

  await client.ping();
  await client.setLoggingLevel('debug');
  // Twice: the second answer comes from the gateway cache.
  for (let i = 0; i < 2; i++) {
    await client.listTools();
    await client.listPrompts();
    await client.listResources();
    await client.listResourceTemplates();
    await client.readResource({ uri: 'test://static-text' });
  }
  await client.readResource({ uri: 'test://static-binary' });
  await client.readResource({ uri: 'test://template/42/data' });
  await client.readResource({ uri: 'test://template//data' }).catch(() => undefined);

  // A tool's content is exactly what the server answered.
  const tools = [
    'test_simple_text',
    'test_image_content',
    'test_audio_content',
    'test_embedded_resource',
    'test_multiple_content_types',
    'test_error_handling',
  ];
  for (const name of tools) {
    await client.callTool({ name, arguments: {} });
    const got = lastResult(seen);
    const direct = await directCall(name);
    t.strictSame(got.content, direct.content, `${name}: the content the server answered, no field more or less`);
    const fields = Object.keys(direct).filter((k) => !MODERN_FIELDS.has(k) && k !== '_meta');
    t.same(Object.keys(got).sort(), fields.sort(), `${name}: no result field but the server's`);
  }
  const onprogress = () => void heard.progress++;
  await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, { onprogress });
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });

  await client.getPrompt({ name: 'test_simple_prompt' });
  await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
  const resourceUri = 'test://static-text';
  await client.getPrompt({ name: 'test_prompt_with_embedded_resource', arguments: { resourceUri } });
  await client.getPrompt({ name: 'test_prompt_with_image' });
  const ref = { type: 'ref/resource', uri: 'test://template/{id}/data' };
  const completed = await client.request(
    { method: 'completion/complete', params: { ref, argument: { name: 'id', value: '4' } } },
    CompleteResultSchema,
  );
  t.same(completed.completion.values, ['42'], 'completion/complete answered');
  // The SDK sends no tasks/* to a server that declared no tasks: asked raw, the answers kept as well.
  const sessionId = (client.transport as LegacyTransport).sessionId!;
  for (const [method, params] of [
    ['tasks/list', {}],
    ['tasks/get', { taskId: 'no-such-task' }],
    ['tools/call', { name: 'test_simple_text', arguments: {}, task: { ttl: 60_000 } }],
  ] as const) {
    seen.push(...(await rawPost(sessionId, 'ada', { jsonrpc: '2.0', id: `raw-${method}`, method, params })));
  }

  // The GET stream: list changes and resources/updated, from the server's subscriptions/listen.
  await client.subscribeResource({ uri: 'test://watched-resource' });
  await until(
    async () => {
      await client.callTool({ name: 'test_trigger_resource_update', arguments: {} });
      return heard.updated > 0;
    },
    { what: 'resources/updated on the GET stream', everyMs: 100 },
  );
  await client.unsubscribeResource({ uri: 'test://watched-resource' });
  await until(
    async () => {
      if (heard.tools === 0) await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
      if (heard.prompts === 0) await client.callTool({ name: 'test_trigger_prompt_change', arguments: {} });
      return heard.tools > 0 && heard.prompts > 0;
    },
    { what: 'tools and prompts list_changed on the GET stream', everyMs: 100 },
  );

  const streamed = `progress (${heard.progress}) and log lines (${heard.message}) on the call streams`;
  t.ok(heard.progress >= 1 && heard.message >= 1, streamed);
  const methods = new Set(seen.flatMap((m) => ('method' in m ? [m.method] : [])));
  const expected = [
    'notifications/progress',
    'notifications/message',
    'notifications/resources/updated',
    'notifications/tools/list_changed',
    'notifications/prompts/list_changed',
    'elicitation/create',
  ];
  for (const m of expected) {
    t.ok(methods.has(m), `${m} was received`);
  }
  const results = seen.filter((m) => 'result' in m).length;
  const errors = seen.filter((m) => 'error' in m).length;
  t.ok(results >= 35 && errors >= 1, `${results} results and ${errors} errors, ${seen.length} messages in all`);
  const found = seen.flatMap((m, i) => modernKeys(m, `message ${i} (${'method' in m ? m.method : 'response'})`, []));
  t.strictSame(found.slice(0, 20), [], `no 2026-only key in ${seen.length} messages (${found.length} found)`);
});

t.test("what is left out, and what is kept: the server's own keys and data, the legacy era's task keys", async (t) => {
  const serverInfo = { name: 's', version: '1' };
  // A tool whose argument is named _meta: its schema is the server's, never read.
  const schema = { type: 'object', properties: { _meta: { type: 'object', properties: { 'dev.mcp/x': {} } } } };
  const answer = legacyMessage({
    jsonrpc: '2.0',
    id: 1,
    result: {
      resultType: 'complete',
      ttlMs: 1000,
      cacheScope: 'public',
      _meta: {
        'io.modelcontextprotocol/serverInfo': serverInfo,
        'dev.mcp/x': 1,
        'com.example/trace': 'abc',
        plain: true,
      },
      tools: [
        { name: 'a', inputSchema: schema, _meta: { 'io.modelcontextprotocol/x': 1 } },
        { name: 'b', _meta: { 'com.example.mcp/kept': 2 } },
      ],
      structuredContent: { _meta: { 'io.modelcontextprotocol/serverInfo': 'the tool said so' } },
    },
  });
  t.strictSame(
    answer,
    {
      jsonrpc: '2.0',
      id: 1,
      result: {
        _meta: { 'com.example/trace': 'abc', plain: true },
        tools: [
          { name: 'a', inputSchema: schema },
          { name: 'b', _meta: { 'com.example.mcp/kept': 2 } },
        ],
        structuredContent: { _meta: { 'io.modelcontextprotocol/serverInfo': 'the tool said so' } },
      },
    },
    "reserved keys gone at every level, 2026 fields from the result; the server's own keys, schemas and data kept",
  );
  const related = { 'io.modelcontextprotocol/related-task': { taskId: 't' } };
  const sent = { jsonrpc: '2.0' as const, id: 2, result: { content: [], _meta: related } };
  const bare = { jsonrpc: '2.0' as const, id: 2, result: { content: [] } };
  t.strictSame(legacyMessage(sent), bare, "a server's related-task is left out: 2026 has none to give");
  const fromTask = { ...bare, result: { content: [], resultType: 'complete' } };
  t.strictSame(legacyMessage(fromTask, 't'), sent, "tasks/result's answer names its task");
  const ask = { jsonrpc: '2.0' as const, id: 'cw~r~0', method: 'elicitation/create', params: { message: 'm' } };
  t.strictSame(legacyMessage(ask, 't'), { ...ask, params: { message: 'm', _meta: related } }, 'and so do its asks');
  const meta = { 'io.modelcontextprotocol/subscriptionId': 1 };
  const note = (method: string, params: JsonObject) => ({ jsonrpc: '2.0' as const, method, params });
  const ack = note('notifications/subscriptions/acknowledged', { _meta: meta });
  t.equal(legacyMessage(ack), undefined, 'no listen acknowledgment');
  t.equal(legacyMessage(note('notifications/tasks', { taskId: 't', status: 'working' })), undefined, 'no 2026 task');
  t.strictSame(
    legacyMessage(note('notifications/resources/updated', { uri: 'u', _meta: meta })),
    {
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: { uri: 'u' },
    },
    "a listen's subscriptionId gone, and the `_meta` it leaves empty",
  );
  const log = note('notifications/message', { level: 'info', data: { _meta: meta } });
  t.equal(legacyMessage(log), log, "a log line's data is the server's: not read");
  const error = { jsonrpc: '2.0' as const, id: 3, error: { code: -32602, message: 'no', data: { resultType: 'x' } } };
  t.equal(legacyMessage(error), error, 'errors as they are');
});
