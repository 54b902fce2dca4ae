// Tasks across replicas: three Causeway processes sharing one Redis in front of the legacy
// fixture, whose task tools run as 2025-11-25 tasks. A task created on one replica is read,
// answered and finished on another after its creator is killed; another principal cannot see it;
// a listen stream that names it hears it move (notifications/tasks), whichever replica follows
// it; and a principal beyond tasks.maxFollowedPerPrincipal is refused while another is not.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { SseReader } from '../helpers/sse.js';
import { META_CAPABILITIES, modernBody, modernHeaders, post, type JsonObject } from './wire.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const CAPS: JsonObject = { elicitation: {}, extensions: { [TASKS]: {} } };
const SECRET = 'tasks-test-hash-secret-0123456789abcdef';
const PATIENCE_MS = 60_000;

const redis = await startRedis();
const upstream = await startLegacyServer();
const settings = {
  'upstream.url': upstream.url,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'principal.mode': 'header',
  'principal.hashSecret': SECRET,
  'mrtr.stateKeys': Buffer.alloc(32, 3).toString('base64'),
  'tasks.maxFollowedPerPrincipal': 2,
};
const [a, b, c] = await Promise.all([spawnCauseway(settings), spawnCauseway(settings), spawnCauseway(settings)]);
t.teardown(async () => {
  await Promise.all([a, b, c].map((r) => r.close()));
  await upstream.close();
  await redis.stop();
});

let nextId = 1;
async function rpc(replica: RunningCauseway, principal: string, method: string, params: JsonObject, name?: string) {
  const res = await post(replica.url, modernBody(method, params, nextId++, { [META_CAPABILITIES]: CAPS }), {
    ...modernHeaders(method, name),
    'x-causeway-principal': principal,
  });
  return res;
}
const create = (r: RunningCauseway, principal: string, tool: string, args: JsonObject) =>
  rpc(r, principal, 'tools/call', { name: tool, arguments: args }, tool);
const taskGet = (r: RunningCauseway, principal: string, taskId: string) =>
  rpc(r, principal, 'tasks/get', { taskId }, taskId);

async function created(r: RunningCauseway, principal: string, tool: string, args: JsonObject): Promise<string> {
  const res = await create(r, principal, tool, args);
  if (res.json?.result?.resultType !== 'task') throw new Error(`${tool} made no task: ${res.text}`);
  return res.json.result.taskId as string;
}

/** The task as `r` reports it, once its status is `status`. */
function reaches(r: RunningCauseway, principal: string, taskId: string, status: string): Promise<any> {
  return until(
    async () => {
      const task = (await taskGet(r, principal, taskId)).json?.result;
      return task?.status === status && task;
    },
    { what: `task ${status}`, timeoutMs: PATIENCE_MS, everyMs: 100 },
  );
}

t.test('a task created on one replica is answered and finished on another after its creator is killed', async (t) => {
  const taskId = await created(a, 'alice', 'confirm_delete', { filename: 'a.txt' });
  const asking = await reaches(b, 'alice', taskId, 'input_required');
  t.same(Object.keys(asking.inputRequests), ['confirm'], 'the ask, keyed by the server');
  t.equal(asking.inputRequests.confirm.method, 'elicitation/create');
  t.notOk('requestState' in asking, 'no requestState on a task');

  a.child.kill('SIGKILL');
  await new Promise((r) => a.child.once('exit', r));

  const ack = await rpc(
    b,
    'alice',
    'tasks/update',
    { taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    taskId,
  );
  t.same(ack.json?.result, { resultType: 'complete' }, 'an empty ack');
  const done = await reaches(c, 'alice', taskId, 'completed');
  t.equal(done.result.content[0].text, 'Deleted a.txt', "the tool's own result, inlined");
});

t.test("another principal's task is unknown to them, and stays the owner's", async (t) => {
  const taskId = await created(b, 'alice', 'slow_compute', { seconds: 30, label: 'private' });
  for (const [method, params] of [
    ['tasks/get', { taskId }],
    ['tasks/update', { taskId, inputResponses: {} }],
    ['tasks/cancel', { taskId }],
  ] as const) {
    const res = await rpc(c, 'mallory', method, params as JsonObject, taskId);
    t.equal(res.json?.error?.code, -32602, `${method} by another principal: unknown task`);
  }
  const mine = await taskGet(c, 'alice', taskId);
  t.equal(mine.json?.result?.status, 'working', 'the owner still sees it working');
  t.same((await rpc(c, 'alice', 'tasks/cancel', { taskId }, taskId)).json?.result, { resultType: 'complete' });
  await reaches(b, 'alice', taskId, 'cancelled');
});

t.test('a listen stream naming the task hears it move, from the replica that follows it', async (t) => {
  const taskId = await created(c, 'alice', 'confirm_delete', { filename: 'b.txt' });
  await reaches(b, 'alice', taskId, 'input_required');

  const abort = new AbortController();
  t.teardown(() => abort.abort());
  const res = await fetch(b.url, {
    method: 'POST',
    headers: { ...modernHeaders('subscriptions/listen'), 'x-causeway-principal': 'alice' },
    body: JSON.stringify(
      modernBody('subscriptions/listen', { notifications: { taskIds: [taskId] } }, 'listen-1', {
        [META_CAPABILITIES]: CAPS,
      }),
    ),
    signal: abort.signal,
  });
  t.equal(res.status, 200);
  const stream = new SseReader(res.body as ReadableStream<Uint8Array>, { endOnError: true });
  const ack = await stream.nextMessage();
  t.equal(ack.method, 'notifications/subscriptions/acknowledged');
  t.same(ack.params.notifications.taskIds, [taskId], 'the acknowledgment names the task');

  await rpc(b, 'alice', 'tasks/update', { taskId, inputResponses: { confirm: { action: 'decline' } } }, taskId);
  const seen: any[] = [];
  while (!seen.some((n) => n.params?.status === 'completed')) {
    const n = await stream.nextMessage();
    if (n === undefined) break;
    seen.push(n);
  }
  t.ok(
    seen.every((n) => n.method === 'notifications/tasks' && n.params.taskId === taskId),
    'only notifications/tasks of this task',
  );
  t.equal(seen.at(-1)?.params?.status, 'completed', 'the end, heard on the stream');
  t.equal(seen.at(-1)?.params?.result?.content?.[0]?.text, 'Kept b.txt', 'with its result');
  t.equal(
    seen.at(-1)?.params?._meta?.['io.modelcontextprotocol/subscriptionId'],
    'listen-1',
    'tagged with the subscription',
  );
});

t.test('tasks.maxFollowedPerPrincipal bounds one principal on a replica, not another', async (t) => {
  const ids = [
    await created(b, 'carol', 'slow_compute', { seconds: 60 }),
    await created(b, 'carol', 'slow_compute', { seconds: 60 }),
  ];
  const third = await create(b, 'carol', 'slow_compute', { seconds: 60 });
  t.equal(third.status, 503, 'a third task for carol is refused');
  t.equal(third.json?.error?.code, -32603);
  ids.push(await created(b, 'dave', 'slow_compute', { seconds: 60 }));
  for (const [i, id] of ids.entries()) {
    const who = i < 2 ? 'carol' : 'dave';
    await rpc(b, who, 'tasks/cancel', { taskId: id }, id);
    await reaches(b, who, id, 'cancelled');
  }
  await until(async () => (await create(b, 'carol', 'slow_compute', { seconds: 0 })).status === 200, {
    what: 'carol may start a task again',
    timeoutMs: PATIENCE_MS,
    everyMs: 100,
  });
});
