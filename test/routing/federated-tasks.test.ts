// Tasks on a federated mount: two legacy fixtures that run 2025-11-25 tasks behind one mount. A
// task created through a member's prefixed tool name is found again by tasks/get, tasks/update
// and tasks/cancel, which name only the task id: the mount routes them to the member the task
// lives on. discover advertises the extension once for the mount.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { until } from '../helpers/until.js';
import { META_CAPABILITIES, modernBody, modernHeaders, post, type JsonObject } from '../e2e/wire.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const CAPS: JsonObject = { elicitation: {}, extensions: { [TASKS]: {} } };

const a = await startLegacyServer({ label: 'a' });
const b = await startLegacyServer({ label: 'b' });
const causeway = await startCauseway({
  upstreams: JSON.stringify({ alpha: { url: a.url }, beta: { url: b.url } }),
  mounts: JSON.stringify({ '/all/mcp': { upstreams: ['alpha', 'beta'] } }),
  'log.level': 'warn',
});
t.teardown(async () => {
  await causeway.close();
  await a.close();
  await b.close();
});
const url = new URL('/all/mcp', causeway.url).toString();

let nextId = 1;
const rpc = (method: string, params: JsonObject, name?: string) =>
  post(url, modernBody(method, params, nextId++, { [META_CAPABILITIES]: CAPS }), modernHeaders(method, name));

t.test('a task on a member is followed through the mount by its id alone', async (t) => {
  const discover = await rpc('server/discover', {});
  t.ok(discover.json?.result?.capabilities?.extensions?.[TASKS], 'the mount advertises the extension');

  const before = b.stats().tasksCreated;
  const created = await rpc(
    'tools/call',
    { name: 'beta__confirm_delete', arguments: { filename: 'c.txt' } },
    'beta__confirm_delete',
  );
  t.equal(created.json?.result?.resultType, 'task', created.text.slice(0, 200));
  const taskId = created.json.result.taskId as string;
  t.equal(b.stats().tasksCreated, before + 1, 'beta runs it');

  let task: any;
  await until(
    async () => (task = (await rpc('tasks/get', { taskId }, taskId)).json?.result)?.status === 'input_required',
    { what: 'the question', timeoutMs: 60_000, everyMs: 100 },
  );
  t.same(Object.keys(task.inputRequests), ['confirm']);
  t.same(
    (
      await rpc(
        'tasks/update',
        { taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
        taskId,
      )
    ).json?.result,
    { resultType: 'complete' },
  );
  await until(async () => (task = (await rpc('tasks/get', { taskId }, taskId)).json?.result)?.status === 'completed', {
    what: 'the end',
    timeoutMs: 60_000,
    everyMs: 100,
  });
  t.equal(task.result.content[0].text, 'Deleted c.txt');

  const unknown = await rpc(
    'tasks/get',
    { taskId: '00000000-0000-4000-8000-000000000000' },
    '00000000-0000-4000-8000-000000000000',
  );
  t.equal(unknown.json?.error?.code, -32602, 'an unknown task is unknown on the mount too');
});

t.test(
  'a member whose tools say they are tasks (it runs none): the mount advertises the extension and holds them',
  async (t) => {
    const plain = await startLegacyServer({ label: 'plain', plainTasks: true });
    const other = await startLegacyServer({ label: 'other', stateless: true });
    const mount = await startCauseway({
      upstreams: JSON.stringify({ plain: { url: plain.url }, other: { url: other.url } }),
      mounts: JSON.stringify({ '/both/mcp': { upstreams: ['plain', 'other'] } }),
      'log.level': 'warn',
    });
    t.teardown(async () => {
      await mount.close();
      await plain.close();
      await other.close();
    });
    const at = new URL('/both/mcp', mount.url).toString();
    const call = (method: string, params: JsonObject, name?: string) =>
      post(at, modernBody(method, params, nextId++, { [META_CAPABILITIES]: CAPS }), modernHeaders(method, name));
    const discover = await call('server/discover', {});
    t.ok(discover.json?.result?.capabilities?.extensions?.[TASKS], 'the mount advertises the extension');
    t.notOk(discover.json?.result?.capabilities?.tasks, 'and no legacy tasks capability');
    const created = await call(
      'tools/call',
      { name: 'plain__slow_compute', arguments: { seconds: 0, label: 'fed' } },
      'plain__slow_compute',
    );
    t.equal(created.json?.result?.resultType, 'task', created.text.slice(0, 200));
    const taskId = created.json.result.taskId as string;
    let task: any;
    await until(
      async () => (task = (await call('tasks/get', { taskId }, taskId)).json?.result)?.status === 'completed',
      { what: 'the end', timeoutMs: 60_000, everyMs: 100 },
    );
    t.equal(task.result.content[0].text, 'Computed fed after 0s');
    t.equal(plain.stats().tasksCreated, 0, 'held by Causeway, not run as the upstream’s task');
  },
);
