// Tasks across eras: a legacy client (SDK 1.32.2) runs 2025-11-25 tasks through Causeway's
// translated face on a 2026-only server that has the tasks extension (the modern fixture with
// --tasks, its own process), through two replicas on one Redis, its POSTs landing on each in turn.
// A task-augmented call is created, polled with tasks/get, its result got with tasks/result and
// listed by tasks/list; another is cancelled; an asking task's question reaches the client as a
// real elicitation request tagged with the task, and the answer completes it. A session touches
// only its own tasks. In front of the fixture without the extension, no tasks are advertised.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskResultSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type ElicitRequest,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import type { ModernServerStats } from '../fixtures/modern-server.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway, type Settings } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { MODERN_FIXTURE, spawnFixture } from './upstreams.js';

const TASKS = { list: {}, cancel: {}, requests: { tools: { call: {} } } };
const INFO = { name: 'tasks-across-eras', version: '1.0.0' };

const redis = await startRedis();
const fixture = await spawnFixture(0, { script: MODERN_FIXTURE, args: ['--tasks'] });
const settings: Settings = {
  'upstream.url': fixture.url,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'store.keyPrefix': `tx${randomBytes(3).toString('hex')}:`,
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
  'principal.mode': 'header',
  'principal.header': 'x-user',
  'principal.hashSecret': 'tasks-across-eras-secret',
  'log.level': 'warn',
};
const replicas = [await startCauseway(settings), await startCauseway(settings)] as const;
const [a, b] = replicas;
t.teardown(async () => {
  for (const replica of replicas) await replica.close();
  await fixture.stop();
  await redis.stop();
});

const upstreamStats = async (): Promise<ModernServerStats> => (await fixture.stats()) as unknown as ModernServerStats;

/** A legacy client of `user` whose POSTs go to the two replicas in turn (its GET stream to the second). */
async function legacyClient(t: Test, user: string): Promise<LegacyClient> {
  const urls = [a.url!, b.url!];
  let n = 0;
  const fetchVia = (_input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    fetch(init?.method === 'POST' ? urls[n++ % 2]! : urls[1]!, init);
  const client = new LegacyClient(INFO, { capabilities: { elicitation: {} } });
  const requestInit = { headers: { 'x-user': user } };
  await client.connect(new LegacyTransport(new URL(a.url!), { fetch: fetchVia, requestInit }));
  t.teardown(() => client.close());
  return client;
}

async function createTask(client: LegacyClient, name: string, args: Record<string, unknown>): Promise<Task> {
  const params = { name, arguments: args, task: { ttl: 60_000 } };
  const created = await client.request({ method: 'tools/call', params }, CreateTaskResultSchema);
  if ('resultType' in created) throw new Error('a 2026 field reached the legacy client');
  return created.task;
}

async function refusal(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(error instanceof McpError)) throw new Error(`expected a JSON-RPC error, got ${String(error)}`);
  return error;
}

function relatedTaskId(meta: Record<string, unknown> | undefined): unknown {
  return (meta?.[RELATED_TASK_META_KEY] as { taskId?: unknown } | undefined)?.taskId;
}

function text(result: CallToolResult): string | undefined {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : undefined;
}

t.test("initialize advertises legacy tasks from the upstream's extension; untasked calls answer plainly", async (t) => {
  const client = await legacyClient(t, 'ada');
  t.same(client.getServerCapabilities()?.tasks, TASKS, 'tasks: list, cancel, tools/call');
  const plain = await client.callTool({ name: 'slow_task', arguments: { ms: 0 } });
  t.equal(text(plain as CallToolResult), 'slow_task finished after 0ms', 'no task asked, none made');
});

t.test('a task-augmented call is created, polled, its result got, and listed', async (t) => {
  const client = await legacyClient(t, 'ada');
  const before = await upstreamStats();
  const task = await createTask(client, 'slow_task', { ms: 300 });
  t.match(task, { taskId: String, status: 'working', ttl: 300_000, pollInterval: 100 });
  t.match(task, { createdAt: String, lastUpdatedAt: String });
  t.notOk('ttlMs' in task || 'pollIntervalMs' in task, 'the legacy names, not the 2026 ones');

  const polled = await client.experimental.tasks.getTask(task.taskId);
  t.equal(polled.taskId, task.taskId, 'tasks/get finds it, on the other replica');
  t.ok(['working', 'completed'].includes(polled.status), `tasks/get: ${polled.status}`);
  t.notOk('result' in polled || 'resultType' in polled, 'the flat legacy Task, no DetailedTask field');

  const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  t.equal(text(result), 'slow_task finished after 300ms', "tasks/result: the tool's own result");
  t.equal(relatedTaskId(result._meta), task.taskId, 'named with its task in _meta');
  t.same(Object.keys(result._meta ?? {}), [RELATED_TASK_META_KEY], 'no 2026 key beside it');
  t.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');

  const listed = await client.experimental.tasks.listTasks();
  t.match(listed.tasks, [{ taskId: task.taskId, status: 'completed' }], 'tasks/list lists the session task');
  const after = await upstreamStats();
  t.equal((after.toolCalls.slow_task ?? 0) - (before.toolCalls.slow_task ?? 0), 1, 'one tools/call upstream');
  const gets = (after.requestsByMethod['tasks/get'] ?? 0) - (before.requestsByMethod['tasks/get'] ?? 0);
  t.ok(gets >= 4, `tasks/get upstream for each (${gets})`);
  t.notOk(after.requestsByMethod['tasks/result'], '2026 has no tasks/result: none sent');
});

t.test('another task is cancelled, and stays cancelled', async (t) => {
  const client = await legacyClient(t, 'ada');
  const task = await createTask(client, 'slow_task', { ms: 600_000 });
  const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
  t.match(cancelled, { taskId: task.taskId, status: 'cancelled', statusMessage: 'Cancelled by the client' });
  t.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
  const again = await refusal(client.experimental.tasks.cancelTask(task.taskId));
  t.equal(again.code, -32602, 'a task already ended cannot be cancelled');
  t.match(again.message, 'terminal status: cancelled');
  const noResult = await refusal(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));
  t.match(noResult.message, 'was cancelled', 'tasks/result answers its end');
});

t.test("an asking task's question reaches the client as a real elicitation, and the answer completes it", async (t) => {
  const client = await legacyClient(t, 'ada');
  const asked: ElicitRequest['params'][] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: 'accept', content: { name: 'Ada' } };
  });
  const task = await createTask(client, 'asking_task', {});
  await until(async () => (await client.experimental.tasks.getTask(task.taskId)).status === 'input_required', {
    what: 'the task to wait for input',
  });
  const waiting = await client.request({ method: 'tasks/get', params: { taskId: task.taskId } }, GetTaskResultSchema);
  t.notOk('inputRequests' in waiting, 'tasks/get shows no 2026 inputRequests');
  t.equal(asked.length, 0, 'nothing is asked before tasks/result');

  const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  t.equal(text(result), 'Hello, Ada, from a task', 'the answer went up and completed the task');
  t.equal(asked.length, 1, 'asked once');
  t.equal(asked[0]?.message, 'Who runs this task?');
  t.equal(relatedTaskId(asked[0]?._meta), task.taskId, 'the elicitation names its task');
  t.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');
});

t.test('a session touches only its own tasks: another session or principal finds them unknown', async (t) => {
  const ada = await legacyClient(t, 'ada');
  const task = await createTask(ada, 'slow_task', { ms: 0 });
  for (const [who, client] of [
    ['bob', await legacyClient(t, 'bob')],
    ["another session of ada's", await legacyClient(t, 'ada')],
  ] as const) {
    const get = await refusal(client.experimental.tasks.getTask(task.taskId));
    t.equal(get.code, -32602, `${who}: tasks/get -32602`);
    t.match(get.message, 'Unknown or expired task');
    t.equal((await refusal(client.experimental.tasks.cancelTask(task.taskId))).code, -32602, `${who}: tasks/cancel`);
    const result = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    t.equal((await refusal(result)).code, -32602, `${who}: tasks/result`);
    t.same((await client.experimental.tasks.listTasks()).tasks, [], `${who}: tasks/list is empty`);
  }
  t.equal((await ada.experimental.tasks.getTask(task.taskId)).taskId, task.taskId, 'its own session still finds it');
});

t.test('tasks/list pages a long list, oldest first', async (t) => {
  const client = await legacyClient(t, 'cy');
  const ids: string[] = [];
  for (let i = 0; i < 21; i++) ids.push((await createTask(client, 'slow_task', { ms: 0 })).taskId);
  const first = await client.experimental.tasks.listTasks();
  t.same(
    first.tasks.map((task) => task.taskId),
    ids.slice(0, 20),
    'the first page: twenty',
  );
  t.type(first.nextCursor, 'string');
  const second = await client.experimental.tasks.listTasks(first.nextCursor);
  t.same(
    second.tasks.map((task) => task.taskId),
    ids.slice(20),
    'the second: the rest',
  );
  t.notOk(second.nextCursor, 'and no more');
});

t.test('tasks the restarted upstream no longer knows: left out of tasks/list, unknown to tasks/get', async (t) => {
  const client = await legacyClient(t, 'dee');
  const task = await createTask(client, 'slow_task', { ms: 0 });
  t.equal((await client.experimental.tasks.listTasks()).tasks.length, 1);
  await fixture.stop();
  const again = await spawnFixture(fixture.port, { script: MODERN_FIXTURE, args: ['--tasks'], t });
  t.equal(again.port, fixture.port, 'the fixture is back on its port, its tasks gone');
  t.same((await client.experimental.tasks.listTasks()).tasks, [], 'tasks/list leaves it out');
  t.equal((await refusal(client.experimental.tasks.getTask(task.taskId))).code, -32602, 'tasks/get: -32602');
});

t.test('in front of a 2026 server without the extension, no tasks are advertised or run', async (t) => {
  const plain = await startModernServer();
  const causeway = await startCauseway({ 'upstream.url': plain.url, 'log.level': 'warn' });
  t.teardown(async () => {
    await causeway.close();
    await plain.close();
  });
  const client = new LegacyClient(INFO, { capabilities: {} });
  await client.connect(new LegacyTransport(new URL(causeway.url!)));
  t.teardown(() => client.close());
  t.notOk(client.getServerCapabilities()?.tasks, 'no tasks capability');
  const res = await fetch(causeway.url!, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': (client.transport as LegacyTransport).sessionId!,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/list', params: {} }),
  });
  t.equal(((await res.json()) as { error?: { code?: number } }).error?.code, -32601, 'tasks/list: method not found');
});
