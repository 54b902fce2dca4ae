// Calls Causeway runs as tasks itself (upstream.taskTools), for tools the upstream does not run as
// tasks: replicas sharing Redis in front of the legacy fixture. The task outlives the upstream's
// request timeout, its questions become inputRequests answered from another replica, tasks/cancel
// on another replica stops the call upstream, a drained holder cancels its call and fails the task
// with why, and a task whose holder is killed fails instead of hanging. A client that does not declare the extension
// gets the plain call, as before.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { META_CAPABILITIES, modernBody, modernHeaders, post, type JsonObject } from './wire.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const CAPS: JsonObject = { elicitation: {}, extensions: { [TASKS]: {} } };
const PATIENCE_MS = 60_000;

const redis = await startRedis();
const upstream = await startLegacyServer();
const settings = {
  'upstream.url': upstream.url,
  'upstream.taskTools': 'slow,test_input_required_result_multi_*',
  'upstream.requestTimeoutMs': 1_500,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': Buffer.alloc(32, 5).toString('base64'),
  // Four silent beats fail a task: long enough that a busy machine's event-loop stalls never do.
  'tasks.heartbeatMs': 1_000,
};
const [a, b] = await Promise.all([spawnCauseway(settings), spawnCauseway(settings)]);
t.teardown(async () => {
  await Promise.all([a, b].map((r) => r.close()));
  await upstream.close();
  await redis.stop();
});

let nextId = 1;
const rpc = (r: RunningCauseway, method: string, params: JsonObject, name?: string, caps: JsonObject = CAPS) =>
  post(r.url, modernBody(method, params, nextId++, { [META_CAPABILITIES]: caps }), modernHeaders(method, name), {
    timeoutMs: 30_000,
  });
const call = (r: RunningCauseway, tool: string, args: JsonObject, caps?: JsonObject) =>
  rpc(r, 'tools/call', { name: tool, arguments: args }, tool, caps);

async function created(r: RunningCauseway, tool: string, args: JsonObject): Promise<string> {
  const res = await call(r, tool, args);
  if (res.json?.result?.resultType !== 'task') throw new Error(`${tool} made no task: ${res.text}`);
  return res.json.result.taskId as string;
}

async function followed(r: RunningCauseway): Promise<number> {
  const text = await (await fetch(`${r.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('causeway_tasks_followed '));
  return Number(line?.split(' ')[1]);
}

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

t.test('discover advertises the extension', async (t) => {
  const res = await rpc(a, 'server/discover', {});
  t.ok(res.json?.result?.capabilities?.extensions?.[TASKS], 'tasks extension');
});

t.test('a call held as a task outlives upstream.requestTimeoutMs', async (t) => {
  const plain = await call(a, 'slow', { ms: 3_000 }, {});
  t.equal(plain.status, 504, 'without the extension: the plain call, cut off by the timeout');
  const taskId = await created(a, 'slow', { ms: 3_000 });
  const done = await taskOn(b, taskId, (x) => x?.status !== 'working');
  t.equal(done.status, 'completed');
  t.equal(done.result.content[0].text, 'done', "the tool's own answer");
});

t.test('its questions become inputRequests, answered from another replica', async (t) => {
  const taskId = await created(a, 'test_input_required_result_multi_round', {});
  const first = await taskOn(b, taskId, (x) => x?.status === 'input_required');
  t.same(Object.keys(first.inputRequests), ['step1']);
  await rpc(
    b,
    'tasks/update',
    { taskId, inputResponses: { step1: { action: 'accept', content: { name: 'Ada' } } } },
    taskId,
  );
  const second = await taskOn(b, taskId, (x) => x?.inputRequests?.step2 !== undefined);
  t.notOk('step1' in second.inputRequests, 'the answered question is gone');
  await rpc(
    a,
    'tasks/update',
    { taskId, inputResponses: { step2: { action: 'accept', content: { color: 'green' } } } },
    taskId,
  );
  const done = await taskOn(b, taskId, (x) => x?.status === 'completed');
  t.match(done.result.content[0].text, /Ada/, 'the answers reached the tool');
  t.match(done.result.content[0].text, /green/);
});

t.test('tasks/cancel on another replica stops the call upstream', async (t) => {
  const before = upstream.stats().cancelled;
  const taskId = await created(a, 'slow', { ms: 600_000 });
  await until(() => (upstream.stats().toolCalls['slow'] ?? 0) > 0, {
    what: 'the call upstream',
    timeoutMs: PATIENCE_MS,
  });
  t.equal(await followed(a), 1, 'the holder shows the task in causeway_tasks_followed');
  t.same((await rpc(b, 'tasks/cancel', { taskId }, taskId)).json?.result, { resultType: 'complete' });
  t.equal((await rpc(b, 'tasks/get', { taskId }, taskId)).json?.result?.status, 'cancelled');
  await until(() => upstream.stats().cancelled > before, {
    what: 'the upstream to hear the cancel',
    timeoutMs: PATIENCE_MS,
  });
  t.pass('the upstream call was cancelled');
  await until(async () => (await followed(a)) === 0, {
    what: 'the holder to let go',
    timeoutMs: PATIENCE_MS,
    everyMs: 100,
  });
  t.pass('and the holder let go of it at its next beat');
});

t.test('a drained holder cancels its call upstream and the task fails with why', async (t) => {
  const holder = await spawnCauseway(settings, { t });
  const before = upstream.stats().cancelled;
  const taskId = await created(holder, 'slow', { ms: 600_000 });
  await holder.close();
  t.equal(holder.child.exitCode, 0, 'the drain ended cleanly');
  const failed = await taskOn(b, taskId, (x) => x?.status !== 'working');
  t.equal(failed.status, 'failed');
  t.match(failed.error.message, /shut down/, 'the task says its replica shut down');
  await until(() => upstream.stats().cancelled > before, {
    what: 'the upstream to hear the cancel',
    timeoutMs: PATIENCE_MS,
  });
  t.pass('the call was cancelled upstream, not left running');
});

t.test('a task whose holder is killed fails instead of hanging', async (t) => {
  const holder = await spawnCauseway(settings, { t });
  const taskId = await created(holder, 'slow', { ms: 600_000 });
  holder.child.kill('SIGKILL');
  const failed = await taskOn(b, taskId, (x) => x?.status !== 'working');
  t.equal(failed.status, 'failed');
  t.match(failed.error.message, /gone/);
});
