// A stdio upstream behind two Causeway processes sharing one Redis: the child process of a
// session lives in the replica that opened it, and a request landing on the other replica is
// handed to it over the bus. A principal's calls alternate replicas and keep one process (the
// fixture's per-session counter and its pid show it); progress, a multi-round call whose rounds
// land on different replicas, and a listen all cross over; with the owner killed, the next call
// starts a new process where it landed.

import t, { type Test } from 'tap';
import { fileURLToPath } from 'node:url';
import { spawnCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { rawListen } from '../helpers/listen.js';
import { startRedis } from '../helpers/redis.js';
import { sseMessages } from '../helpers/sse.js';
import { callTool, ELICIT, envelope, nameAnswer, stateKey, textOf, type CallOptions } from '../mrtr/wire.js';
import { modernHeaders, post, toolCall } from './wire.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));
const SECRET = 'stdio-replicas-hash-secret-0123456789';
/** One key for both replicas, so either opens the requestState the other sealed. */
const STATE_KEYS = stateKey();

const redis = await startRedis(t);

function replicaSettings(prefix: string) {
  return {
    'upstream.transport': 'stdio',
    'upstream.command': process.execPath,
    'upstream.args': `${FIXTURE},--stdio`,
    'upstream.name': 'fixture',
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'store.keyPrefix': prefix,
    'principal.mode': 'header',
    'principal.hashSecret': SECRET,
    'mrtr.stateKeys': STATE_KEYS,
  };
}

async function twoReplicas(t: Test, prefix: string): Promise<[RunningCauseway, RunningCauseway]> {
  const settings = replicaSettings(prefix);
  const [a, b] = await Promise.all([spawnCauseway(settings, { t }), spawnCauseway(settings, { t })]);
  return [a!, b!];
}

const as = (principal: string, extra: CallOptions = {}): CallOptions => ({
  ...extra,
  headers: { 'x-causeway-principal': principal, ...extra.headers },
});

async function count(url: string, principal: string): Promise<number> {
  const r = await callTool(url, 'counter', {}, as(principal));
  const n = Number(textOf(r));
  if (r.status !== 200 || !Number.isInteger(n))
    throw new Error(`counter failed: ${r.status} ${JSON.stringify(r.body)}`);
  return n;
}

async function pidOf(url: string, principal: string): Promise<number> {
  const r = await callTool(url, 'fixture_stats', {}, as(principal));
  return (JSON.parse(textOf(r) ?? 'null') as { pid: number }).pid;
}

async function processes(r: RunningCauseway): Promise<number> {
  const metrics = await (await fetch(`${r.adminUrl}/metrics`)).text();
  return Number(/causeway_upstream_processes\{upstream="fixture"\} (\d+)/.exec(metrics)?.[1] ?? 0);
}

const shared = await twoReplicas(t, 'shared:');

t.test('a principal alternating replicas keeps one process: one counter, one pid, one child in all', async (t) => {
  const replicas = shared;
  const counts: number[] = [];
  for (let i = 0; i < 6; i++) counts.push(await count(replicas[i % 2]!.url, 'ada'));
  t.same(counts, [1, 2, 3, 4, 5, 6], 'one upstream session whichever replica served');
  t.equal(await pidOf(replicas[1]!.url, 'ada'), await pidOf(replicas[0]!.url, 'ada'), 'one process behind both');
  t.same(await Promise.all(replicas.map(processes)), [1, 0], 'the child lives in the replica that opened the session');

  t.equal(await count(replicas[1]!.url, 'bob'), 1, 'another principal gets its own session');
  t.same(await Promise.all(replicas.map(processes)), [1, 1], 'opened where its first request landed');
  t.not(await pidOf(replicas[0]!.url, 'bob'), await pidOf(replicas[0]!.url, 'ada'), 'and its own process');
});

t.test('progress, a multi-round call and a listen cross over to the replica running the process', async (t) => {
  const [owner, other] = shared;
  t.equal(await count(owner.url, 'cyd'), 1, 'the session opens on the first replica');

  const call = envelope(
    'tools/call',
    { name: 'progress_many', arguments: { steps: 3 }, _meta: { progressToken: 'p1' } },
    as('cyd'),
  );
  const res = await fetch(other.url, { method: 'POST', headers: call.headers, body: call.body });
  const messages = sseMessages(await res.text()) as Array<{
    method?: string;
    params?: { progress?: number };
    result?: unknown;
  }>;
  t.same(
    messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params?.progress),
    [1, 2, 3],
    'progress from the process on the other replica reached the client',
  );
  t.ok(messages.at(-1)?.result, 'then the result');

  const first = await callTool(other.url, ELICIT, {}, as('cyd'));
  t.equal(first.body?.result?.resultType, 'input_required', 'the ask crossed back from the process');
  const state = first.body.result.requestState as string;
  const inputKey = Object.keys(first.body.result.inputRequests as object)[0]!;
  const second = await callTool(
    owner.url,
    ELICIT,
    { inputResponses: { [inputKey]: nameAnswer('Ada') }, requestState: state },
    as('cyd'),
  );
  t.equal(textOf(second), 'Hello, Ada!', 'its answer given on the other replica reached the same process');

  const before = await Promise.all([owner, other].map(processes));
  const listen = await rawListen(
    t,
    other.url,
    'cross-listen',
    { toolsListChanged: true },
    { init: { headers: { ...modernHeaders('subscriptions/listen'), 'x-causeway-principal': 'cyd' } } },
  );
  t.equal(listen.status, 200);
  t.equal((await listen.next())?.method, 'notifications/subscriptions/acknowledged');
  const { body, headers } = toolCall('test_trigger_tool_change', {}, 'trigger');
  t.equal((await post(owner.url, body, { ...headers, 'x-causeway-principal': 'cyd' })).status, 200);
  t.equal(
    (await listen.next())?.method,
    'notifications/tools/list_changed',
    'the change reached the listener on the other replica',
  );
  // The listen (and the trigger, sent with the same capabilities) is a session of its own, opened
  // where the listen landed: the trigger sent to the first replica crossed to its process.
  const after = await Promise.all([owner, other].map(processes));
  t.same([after[0]! - before[0]!, after[1]! - before[1]!], [0, 1], 'one process more, where the listen landed');
});

t.test('the owner killed: the next call starts a process where it landed', async (t) => {
  const [owner, other] = await twoReplicas(t, 'gone:');
  t.equal(await count(owner.url, 'ada'), 1);
  t.equal(await count(other.url, 'ada'), 2, 'served by the owner');
  (owner as RunningCauseway & { child: { kill(sig: string): void } }).child.kill('SIGKILL');
  t.equal(await count(other.url, 'ada'), 1, 'a new session, in a new process, on the replica still up');
  t.equal(await processes(other), 1);
  t.equal(await count(other.url, 'ada'), 2, 'and it is kept');
});

t.test(
  'the owner drained: the sessions of its processes leave the store; the other replica opens its own',
  async (t) => {
    const [owner, other] = await twoReplicas(t, 'drain:');
    t.equal(await count(owner.url, 'ada'), 1);
    t.equal(await count(other.url, 'ada'), 2, 'served by the owner');
    t.equal((await redis.admin.keys('drain:session:*')).length, 1, 'one session record');
    await owner.close();
    t.same(await redis.admin.keys('drain:session:*'), [], 'gone with the process it named');
    t.equal(await count(other.url, 'ada'), 1, 'a fresh session, here');
    t.equal(await processes(other), 1);
  },
);

t.test(
  "a legacy client's session is served by either replica, on the one process its initialize started",
  async (t) => {
    const [a, b] = shared;
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json',
      'mcp-protocol-version': '2025-11-25',
      'x-causeway-principal': 'old',
    };
    const init = await fetch(a.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
      }),
    });
    t.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id')!;
    t.ok(session, 'a session id');
    const counts: string[] = [];
    for (let i = 1; i <= 4; i++) {
      const res = await fetch((i % 2 ? b : a).url, {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': session },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name: 'counter', arguments: {} },
        }),
      });
      const body = (await res.json()) as { result?: { content?: Array<{ text?: string }> } };
      counts.push(body.result?.content?.[0]?.text ?? `HTTP ${res.status}`);
    }
    t.same(counts, ['1', '2', '3', '4'], 'one upstream session, whichever replica answered');
    const other = await fetch(b.url, {
      method: 'POST',
      headers: { ...headers, 'x-causeway-principal': 'mallory', 'mcp-session-id': session },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'counter', arguments: {} } }),
    });
    t.equal(other.status, 404, 'another principal cannot use it on either replica');
    const ended = await fetch(b.url, { method: 'DELETE', headers: { ...headers, 'mcp-session-id': session } });
    t.equal(ended.status, 200, 'DELETE on the other replica ends it');
    const after = await fetch(a.url, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': session },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 10,
        method: 'tools/call',
        params: { name: 'counter', arguments: {} },
      }),
    });
    t.equal(after.status, 404, 'and it is gone on the replica that opened it');
  },
);
