// Tools that say they are tasks (execution.taskSupport) on a legacy upstream that runs no tasks
// itself (the fixture's plainTasks: no tasks capability, every call a plain call), with real
// processes: two replicas sharing Redis with the default settings hold them as tasks, a tool's
// first question comes as a round whose retry, answered on the other replica, answers the task;
// `required` without the extension is refused before the upstream sees it; upstream.taskSupport
// off leaves the tools plain calls, and tasks.firstAskMs 0 answers the task at once. In front of
// the fixture whose optional tools ask at once (askFirst), the first question makes the task.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { META_CAPABILITIES, modernBody, modernHeaders, post, type JsonObject } from './wire.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const CAPS: JsonObject = { elicitation: {}, extensions: { [TASKS]: {} } };
const PLAIN_CAPS: JsonObject = { elicitation: {} };
const PATIENCE_MS = 60_000;

const redis = await startRedis();
const upstream = await startLegacyServer({ plainTasks: true });
const askFirst = await startLegacyServer({ plainTasks: true, askFirst: true });
const shared = {
  'upstream.url': upstream.url,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': Buffer.alloc(32, 9).toString('base64'),
};
const asking = { ...shared, 'upstream.url': askFirst.url, 'store.keyPrefix': 'askfirst:' };
const [a, b, off, atOnce, askA, askB] = await Promise.all([
  spawnCauseway(shared),
  spawnCauseway(shared),
  spawnCauseway({ 'upstream.url': upstream.url, 'upstream.taskSupport': 'false' }),
  spawnCauseway({ 'upstream.url': upstream.url, 'tasks.firstAskMs': 0 }),
  spawnCauseway(asking),
  spawnCauseway(asking),
]);
t.teardown(async () => {
  await Promise.all([a, b, off, atOnce, askA, askB].map((r) => r.close()));
  await Promise.all([upstream.close(), askFirst.close()]);
  await redis.stop();
});

let nextId = 1;
const rpc = (r: RunningCauseway, method: string, params: JsonObject, name?: string, caps: JsonObject = CAPS) =>
  post(r.url, modernBody(method, params, nextId++, { [META_CAPABILITIES]: caps }), modernHeaders(method, name), {
    timeoutMs: 30_000,
  });
const call = (r: RunningCauseway, tool: string, args: JsonObject, caps?: JsonObject, extra: JsonObject = {}) =>
  rpc(r, 'tools/call', { name: tool, arguments: args, ...extra }, tool, caps);

/** The task as `r` reports it, once `done` holds for it. */
function taskOn(r: RunningCauseway, taskId: string, done: (task: any) => boolean): Promise<any> {
  return until(
    async () => {
      const task = (await rpc(r, 'tasks/get', { taskId }, taskId)).json?.result;
      return done(task) && task;
    },
    { what: 'the task', timeoutMs: PATIENCE_MS, everyMs: 100 },
  );
}

const calls = (tool: string) => upstream.stats().toolCalls[tool] ?? 0;

t.test('discover advertises the extension for tools that say they are tasks', async (t) => {
  t.ok((await rpc(a, 'server/discover', {})).json?.result?.capabilities?.extensions?.[TASKS], 'by default');
  t.notOk(
    (await rpc(off, 'server/discover', {})).json?.result?.capabilities?.extensions?.[TASKS],
    'not with upstream.taskSupport off',
  );
});

t.test('a tool that says it is a task runs as one held here; without the extension, a plain call', async (t) => {
  const created = await call(a, 'slow_compute', { seconds: 1, label: 'held' });
  t.equal(created.json?.result?.resultType, 'task', `a task: ${created.text.slice(0, 200)}`);
  const done = await taskOn(b, created.json.result.taskId, (x) => x?.status !== 'working');
  t.equal(done.status, 'completed', 'read on the other replica');
  t.equal(done.result.content[0].text, 'Computed held after 1s', "the tool's own answer");
  const plain = await call(a, 'slow_compute', { seconds: 0, label: 'plain' }, PLAIN_CAPS);
  t.equal(plain.json?.result?.resultType, 'complete', 'without the extension');
  t.equal(upstream.stats().tasksCreated, 0, 'the upstream itself ran no task');
});

t.test('required, without the extension: -32021 naming it, and nothing reaches the upstream', async (t) => {
  const before = calls('failing_job');
  const refused = await call(b, 'failing_job', {}, PLAIN_CAPS);
  t.equal(refused.status, 400, 'as any -32021');
  t.equal(refused.json?.error?.code, -32021);
  t.ok(refused.json?.error?.data?.requiredCapabilities?.extensions?.[TASKS], 'the error names the extension');
  t.equal(calls('failing_job'), before, 'the upstream never saw the call');
});

t.test('a question before the work is a round; its retry, on the other replica, answers the task', async (t) => {
  const first = await call(a, 'test_tool_with_task', {});
  t.equal(first.json?.result?.resultType, 'input_required', `a round first: ${first.text.slice(0, 200)}`);
  t.notOk('taskId' in (first.json?.result ?? {}), 'no task yet');
  const [key] = Object.keys(first.json.result.inputRequests);
  const second = await call(b, 'test_tool_with_task', {}, CAPS, {
    inputResponses: { [key!]: { action: 'accept', content: { name: 'Alice' } } },
    requestState: first.json.result.requestState,
  });
  t.equal(second.json?.result?.resultType, 'task', `then the task: ${second.text.slice(0, 200)}`);
  t.notOk('requestState' in second.json.result, 'with no requestState');
  const done = await taskOn(b, second.json.result.taskId, (x) => x?.status !== 'working');
  t.equal(done.status, 'completed');
  t.equal(done.result.content[0].text, 'Hello, Alice!', 'the answer given in the round reached the tool');
  const again = await call(b, 'test_tool_with_task', {}, CAPS, {
    inputResponses: { [key!]: { action: 'accept', content: { name: 'Eve' } } },
    requestState: first.json.result.requestState,
  });
  t.equal(again.json?.error?.code, -32602, 'the round, once answered with the task, is used up');
});

t.test('a question after the work started is the task’s inputRequest', async (t) => {
  const created = await call(a, 'confirm_delete', { filename: 'x.txt' });
  t.equal(created.json?.result?.resultType, 'task', 'the tool reported progress before it asked: a task at once');
  const taskId = created.json.result.taskId as string;
  const asking = await taskOn(b, taskId, (x) => x?.status === 'input_required');
  t.same(Object.keys(asking.inputRequests), ['confirm']);
  await rpc(
    b,
    'tasks/update',
    { taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    taskId,
  );
  const done = await taskOn(a, taskId, (x) => x?.status !== 'working' && x?.status !== 'input_required');
  t.equal(done.result.content[0].text, 'Deleted x.txt');
});

t.test('an optional tool that asks first: its question makes the task, answered on the other replica', async (t) => {
  const created = await call(askA, 'confirm_delete', { filename: 'y.txt' });
  t.equal(created.json?.result?.resultType, 'task', `a task, not a round: ${created.text.slice(0, 200)}`);
  t.notOk('requestState' in created.json.result, 'with no requestState');
  const taskId = created.json.result.taskId as string;
  const waiting = await taskOn(askB, taskId, (x) => x?.status === 'input_required');
  t.same(Object.keys(waiting.inputRequests), ['confirm'], 'the question is the task’s inputRequest');
  t.equal(waiting.inputRequests.confirm.method, 'elicitation/create');
  const confirm = { action: 'accept', content: { confirm: true } };
  const ack = await rpc(askB, 'tasks/update', { taskId, inputResponses: { confirm } }, taskId);
  t.same(ack.json?.result, { resultType: 'complete' }, 'tasks/update is acked');
  const done = await taskOn(askA, taskId, (x) => x?.status !== 'working' && x?.status !== 'input_required');
  t.equal(done.status, 'completed');
  t.equal(done.result.content[0].text, 'Deleted y.txt', 'the answer reached the tool');
  t.equal(askFirst.stats().tasksCreated, 0, 'the upstream itself ran no task');
});

t.test('the same tool for a client without the extension: its question is a round, as for any call', async (t) => {
  const round = await call(askA, 'confirm_delete', { filename: 'z.txt' }, PLAIN_CAPS);
  t.equal(round.json?.result?.resultType, 'input_required', `a round: ${round.text.slice(0, 200)}`);
  t.same(Object.keys(round.json.result.inputRequests), ['confirm']);
  const done = await call(askB, 'confirm_delete', { filename: 'z.txt' }, PLAIN_CAPS, {
    inputResponses: { confirm: { action: 'accept', content: { confirm: false } } },
    requestState: round.json.result.requestState,
  });
  t.equal(done.json?.result?.content?.[0]?.text, 'Kept z.txt', 'answered on the other replica');
});

t.test('a required tool that asks before any progress still asks a round before its task', async (t) => {
  const first = await call(askA, 'test_tool_with_task', {});
  t.equal(first.json?.result?.resultType, 'input_required', `a round first: ${first.text.slice(0, 200)}`);
  t.notOk('taskId' in (first.json?.result ?? {}), 'no task yet');
  const second = await call(askA, 'test_tool_with_task', {}, CAPS, {
    inputResponses: { user_name: { action: 'accept', content: { name: 'Cy' } } },
    requestState: first.json.result.requestState,
  });
  t.equal(second.json?.result?.resultType, 'task', `then the task: ${second.text.slice(0, 200)}`);
  const done = await taskOn(askA, second.json.result.taskId, (x) => x?.status === 'completed');
  t.equal(done.result.content[0].text, 'Hello, Cy!');
});

t.test('tasks.firstAskMs 0: the task at once, its first question an inputRequest', async (t) => {
  const created = await call(atOnce, 'test_tool_with_task', {});
  t.equal(created.json?.result?.resultType, 'task', `a task at once: ${created.text.slice(0, 200)}`);
  const taskId = created.json.result.taskId as string;
  const asking = await taskOn(atOnce, taskId, (x) => x?.status === 'input_required');
  t.same(Object.keys(asking.inputRequests), ['user_name']);
  await rpc(
    atOnce,
    'tasks/update',
    { taskId, inputResponses: { user_name: { action: 'accept', content: { name: 'Bo' } } } },
    taskId,
  );
  const done = await taskOn(atOnce, taskId, (x) => x?.status === 'completed');
  t.equal(done.result.content[0].text, 'Hello, Bo!');
});

t.test('upstream.taskSupport off: the tools are plain calls again', async (t) => {
  const plain = await call(off, 'slow_compute', { seconds: 0, label: 'off' });
  t.equal(plain.json?.result?.resultType, 'complete', 'no task, though the client declared the extension');
  t.equal(plain.json?.result?.content?.[0]?.text, 'Computed off after 0s');
  const before = calls('failing_job');
  const sent = await call(off, 'failing_job', {}, PLAIN_CAPS);
  t.equal(sent.json?.result?.resultType, 'complete', 'a required tool is no longer refused here');
  t.equal(calls('failing_job'), before + 1, 'it reached the upstream');
});
