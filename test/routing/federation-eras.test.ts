// A federated mount of one legacy and one 2026-only member: the team that migrated one server of
// a federation keeps its mount. The 2.4.0 client lists both members' tools, calls one of each and
// completes an input_required round from each (the legacy member's elicitation becomes a round,
// the modern member's round is relayed). The SDK 1.32.2 client on the same mount gets the
// translated legacy face over the merged view: both members' tools, a call on each, and each
// member's question put to it as a real elicitation request.

import t from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { modernBody, modernHeaders, post, toolCall } from '../e2e/wire.js';
import { until } from '../helpers/until.js';

const old = await startLegacyServer({ label: 'old' });
const neu = await startModernServer({ label: 'neu', tasks: true });
const causeway = await startCauseway({
  upstreams: JSON.stringify({ old: { url: old.url }, neu: { url: neu.url } }),
  mounts: JSON.stringify({ '/all': { upstreams: ['old', 'neu'] } }),
  'principal.mode': 'header',
  'principal.header': 'x-user',
  'principal.hashSecret': 'federation-eras-test-secret',
  'log.level': 'warn',
});
t.teardown(async () => {
  await causeway.close();
  await old.close();
  await neu.close();
});
const mountUrl = new URL('/all', causeway.app.origin!);
const USER = { 'x-user': 'ada' };

type Json = Record<string, any>;
const textOf = (r: Json): string => r.content.map((c: Json) => c.text).join('');

/** Every page of a tools/list, walked with the client's own cursors. */
async function allToolNames(
  list: (cursor?: string) => Promise<{ tools: Array<{ name: string }>; nextCursor?: string }>,
) {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await list(cursor);
    names.push(...page.tools.map((x) => x.name));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return names;
}

t.test('the 2.4.0 client: both members listed, one call and one input_required round on each', async (t) => {
  const elicited: Json[] = [];
  const client = new Client(
    { name: 'federation-eras', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: {} } },
  );
  client.setRequestHandler('elicitation/create', async (req) => {
    elicited.push(req.params);
    return { action: 'accept', content: { name: 'Ada', username: 'ada', email: 'ada@example.com' } };
  });
  await client.connect(new StreamableHTTPClientTransport(mountUrl, { requestInit: { headers: USER } }));
  t.teardown(() => client.close());

  const names = await allToolNames((cursor) => client.listTools(cursor === undefined ? {} : { cursor }));
  t.ok(names.includes('old__about_old'), 'the legacy member’s tools, prefixed');
  t.ok(names.includes('neu__about_neu'), 'the 2026 member’s tools, prefixed');
  t.ok(names.includes('neu__test_input_required_result_elicitation'));

  t.equal(textOf(await client.callTool({ name: 'old__about_old', arguments: {} })), 'served by old');
  t.equal(textOf(await client.callTool({ name: 'neu__about_neu', arguments: {} })), 'served by neu');

  const fromOld = await client.callTool({ name: 'old__test_elicitation', arguments: { message: 'who?' } });
  t.match(textOf(fromOld), /action=accept/, 'the legacy member’s elicitation, as a round');
  const fromNeu = await client.callTool({ name: 'neu__test_input_required_result_elicitation', arguments: {} });
  t.equal(textOf(fromNeu), 'Hello, Ada!', 'the 2026 member’s round, relayed');
  t.equal(elicited.length, 2, 'one question from each member reached the client');
});

t.test('merged discover names Causeway and holds both members’ capabilities', async (t) => {
  const r = await post(mountUrl.href, modernBody('server/discover'), { ...modernHeaders('server/discover'), ...USER });
  t.equal(r.status, 200);
  const d = r.json.result;
  t.equal(d._meta['io.modelcontextprotocol/serverInfo'].name, 'causeway');
  t.ok(d.capabilities.tools && d.capabilities.prompts && d.capabilities.resources);
  t.match(d.instructions, /\[old\]/);
  t.match(d.instructions, /\[neu\] Modern fixture neu/);
});

t.test('the SDK 1.32.2 client: the translated face over the merged view, real elicitation from each', async (t) => {
  const elicited: string[] = [];
  const client = new LegacyClient(
    { name: 'federation-eras-legacy', version: '1.0.0' },
    { capabilities: { elicitation: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicited.push(String(req.params.message));
    return { action: 'accept', content: { name: 'Grace', username: 'grace', email: 'grace@example.com' } };
  });
  await client.connect(new LegacyTransport(mountUrl, { requestInit: { headers: USER } }));
  t.teardown(() => client.close());
  t.equal(client.getServerVersion()?.name, 'causeway');

  const names = await allToolNames((cursor) => client.listTools(cursor === undefined ? {} : { cursor }));
  t.ok(names.includes('old__about_old') && names.includes('neu__about_neu'), 'both members’ tools');

  t.equal(textOf((await client.callTool({ name: 'old__about_old', arguments: {} })) as Json), 'served by old');
  t.equal(textOf((await client.callTool({ name: 'neu__about_neu', arguments: {} })) as Json), 'served by neu');

  const fromOld = await client.callTool({ name: 'old__test_elicitation', arguments: { message: 'who are you?' } });
  t.match(textOf(fromOld as Json), /action=accept, content=.*grace/, 'the legacy member’s question, answered');
  const fromNeu = await client.callTool({ name: 'neu__test_input_required_result_elicitation', arguments: {} });
  t.equal(textOf(fromNeu as Json), 'Hello, Grace!', 'the 2026 member’s question, answered');
  t.equal(elicited.length, 2, 'each member’s question reached the legacy client as a real elicitation request');
  t.equal(elicited[0], 'who are you?');

  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void (changes += 1));
  // The GET stream opens after initialize; until it is up, a change may pass unseen: trigger until heard.
  await until(
    async () => {
      await client.callTool({ name: 'neu__test_trigger_tool_change', arguments: {} });
      return changes >= 1;
    },
    { what: 'a list change on the legacy client’s GET stream' },
  );
  t.ok(changes >= 1, 'the 2026 member’s list change reaches the legacy client’s GET stream');
});

t.test('one listen stream follows the legacy member’s session and the 2026 member’s own listen', async (t) => {
  const client = new Client(
    { name: 'federation-eras-listen', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(new StreamableHTTPClientTransport(mountUrl, { requestInit: { headers: USER } }));
  t.teardown(() => client.close());
  let changes = 0;
  client.setNotificationHandler('notifications/tools/list_changed', () => void (changes += 1));
  const sub = await client.listen({ toolsListChanged: true });
  t.same(sub.honoredFilter, { toolsListChanged: true });

  await client.callTool({ name: 'neu__test_trigger_tool_change', arguments: {} });
  await until(() => changes >= 1, { what: 'the 2026 member’s list change on the federated stream' });
  t.equal(changes, 1, 'a change on the 2026 member reaches the stream');
  await client.callTool({ name: 'old__test_trigger_tool_change', arguments: {} });
  await until(() => changes >= 2, { what: 'the legacy member’s list change on the federated stream' });
  t.equal(changes, 2, 'and one on the legacy member');
  await sub.close();
});

const TASKS = 'io.modelcontextprotocol/tasks';

t.test('a 2026 member’s own task, through the mount: created, polled and got by a 2026 client', async (t) => {
  const discover = await post(mountUrl.href, modernBody('server/discover'), {
    ...modernHeaders('server/discover'),
    ...USER,
  });
  t.ok(discover.json.result.capabilities.extensions?.[TASKS], 'the merged discover offers the extension');
  const declared = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } } };
  const call = toolCall('neu__slow_task', { ms: 0 }, 1, declared);
  const created = await post(mountUrl.href, call.body, { ...call.headers, ...USER });
  t.equal(created.json.result.resultType, 'task', 'the member made a task');
  const taskId: string = created.json.result.taskId;
  const get = () =>
    post(mountUrl.href, modernBody('tasks/get', { taskId }, 2, declared), {
      ...modernHeaders('tasks/get', taskId),
      ...USER,
    });
  const done = await until(
    async () => {
      const r = await get();
      return r.json.result?.status === 'completed' && r.json.result;
    },
    { what: 'the member’s task to complete, asked through the mount' },
  );
  t.equal(done.result.content[0].text, 'slow_task finished after 0ms', 'tasks/get reached the member that holds it');
  // Who holds the task is remembered per principal: ada's next get asks the member once, another
  // principal's first one finds the owner for itself (the member's own rules then apply).
  const gets = () => neu.stats().requestsByMethod['tasks/get'] ?? 0;
  let before = gets();
  await get();
  t.equal(gets() - before, 1, 'the owner remembered: one tasks/get upstream');
  before = gets();
  const other = await post(mountUrl.href, modernBody('tasks/get', { taskId }, 3, declared), {
    ...modernHeaders('tasks/get', taskId),
    'x-user': 'grace',
  });
  t.equal(other.status, 200);
  t.equal(gets() - before, 2, 'another principal’s lookup is its own: the member asked, then the request relayed');
});

t.test('a legacy client’s task-augmented call on the mount runs as the 2026 member’s task', async (t) => {
  const client = new LegacyClient({ name: 'federation-eras-tasks', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new LegacyTransport(mountUrl, { requestInit: { headers: USER } }));
  t.teardown(() => client.close());
  t.ok(client.getServerCapabilities()?.tasks, 'the legacy tasks capability, from the merged discover');
  const params = { name: 'neu__slow_task', arguments: { ms: 0 }, task: { ttl: 60_000 } };
  const { task } = (await client.request({ method: 'tools/call', params }, CreateTaskResultSchema)) as {
    task: { taskId: string };
  };
  const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  t.equal(textOf(result as Json), 'slow_task finished after 0ms', 'tasks/result: the member’s result');
  t.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');
});

t.test(
  'through the translated face, an error the merged view makes reaches the legacy client as JSON-RPC',
  async (t) => {
    const client = new LegacyClient({ name: 'federation-eras-errors', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new LegacyTransport(mountUrl, { requestInit: { headers: USER } }));
    t.teardown(() => client.close());
    const refused = await client.callTool({ name: 'nobody__no_such_tool', arguments: {} }).then(
      () => undefined,
      (err: unknown) => err as { code?: number; message?: string },
    );
    t.equal(refused?.code, -32602, 'a name no member owns: -32602, made in the loopback, not a hang or a 5xx');
    t.match(refused?.message, /Unknown tool/);
    const served = await client.callTool({ name: 'old__about_old', arguments: {} });
    t.equal(textOf(served as Json), 'served by old', 'the session goes on after the error');
  },
);
