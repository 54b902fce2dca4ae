// The official suite's ten tasks-* scenarios (the io.modelcontextprotocol/tasks extension, never
// scored) through Causeway in front of the legacy fixture, whose task tools run as 2025-11-25
// tasks: on one replica with the memory store, and on two replicas sharing Redis behind a
// round-robin nginx, so that a task created on one replica is read, answered and cancelled on the
// other. Then, with Causeway's default settings, in front of the fixture whose task tools are plain
// tools (listed with execution.taskSupport, no tasks capability): Causeway holds them as tasks
// itself; and in front of that fixture with askFirst, whose optional task tools that ask do so at
// once, before any progress, so that their first question is what makes the task. The two plain
// fixtures run side by side. tasks-status-notifications is skipped by the suite itself (its
// harness is pending).

import t, { type Test } from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { runConformance } from '../helpers/conformance.js';
import { startNginx } from '../helpers/nginx.js';
import { startRedis } from '../helpers/redis.js';
import { META_CAPABILITIES, modernBody, modernHeaders, post } from '../e2e/wire.js';

const SCENARIOS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-dispatch-and-envelope',
  'tasks-status-notifications',
  'tasks-required-task-error',
  'tasks-mrtr-composition',
];
const SKIPPED_BY_SUITE = new Set(['tasks-status-notifications']);
const STATE_KEY = Buffer.alloc(32, 7).toString('base64');

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());
const plainUpstream = await startLegacyServer({ plainTasks: true });
t.teardown(() => plainUpstream.close());
const askFirstUpstream = await startLegacyServer({ plainTasks: true, askFirst: true });
t.teardown(() => askFirstUpstream.close());

/** Scenarios run a few at a time: most of each is the suite waiting on a task. */
const AT_ONCE = 4;

async function passesEveryScenario(t: Test, url: string): Promise<void> {
  const queue = [...SCENARIOS];
  const reports = new Map<string, Awaited<ReturnType<typeof runConformance>>>();
  await Promise.all(
    Array.from({ length: AT_ONCE }, async () => {
      for (let scenario = queue.shift(); scenario !== undefined; scenario = queue.shift()) {
        reports.set(scenario, await runConformance({ t, url, requirements: '2026-07-28', scenario, force: true }));
      }
    }),
  );
  for (const scenario of SCENARIOS) {
    const report = reports.get(scenario)!;
    t.notOk(report.timedOut, `${scenario} finished`);
    const checks = report.scenarios.flatMap((s) => s.checks);
    const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    t.same(
      bad.map((c) => `${c.id}: ${c.message ?? ''}`),
      [],
      `${scenario} has no failures`,
    );
    if (SKIPPED_BY_SUITE.has(scenario))
      t.ok(checks.length > 0 && checks.every((c) => c.status === 'SKIPPED'), `${scenario} is skipped by the suite`);
    else t.ok(checks.filter((c) => c.status === 'SUCCESS').length > 0, `${scenario} passed checks`);
  }
}

/** One Causeway, memory store. */
async function oneReplica(t: Test, url = upstream.url): Promise<string> {
  const causeway = await startCauseway({ 'upstream.url': url, 'log.level': 'warn' });
  t.teardown(() => causeway.close());
  return causeway.url;
}

/** Two Causeways sharing Redis behind a round-robin nginx; checks after the run that both answered tasks/get. */
async function twoReplicas(t: Test, url = upstream.url): Promise<{ url: string; bothAnswered(): Promise<boolean> }> {
  const redis = await startRedis(t);
  const settings = {
    'upstream.url': url,
    'log.level': 'warn',
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': STATE_KEY,
  };
  const a = await startCauseway(settings);
  t.teardown(() => a.close());
  const b = await startCauseway(settings);
  t.teardown(() => b.close());
  const nginx = await startNginx(
    t,
    (port) => `
upstream causeways { server 127.0.0.1:${a.port}; server 127.0.0.1:${b.port}; }
server {
  listen 127.0.0.1:${port};
  location / {
    proxy_pass http://causeways; proxy_http_version 1.1; proxy_set_header Host $http_host;
    proxy_set_header Connection ""; proxy_buffering off;
  }
}
`,
  );
  const answered = async (replica: typeof a) => {
    const text = await (await fetch(`${replica.adminUrl}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('causeway_modern_requests_total{') && l.includes('method="tasks/get"'))
      .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
  };
  return {
    url: `http://127.0.0.1:${nginx.port}/mcp`,
    bothAnswered: async () => (await answered(a)) > 0 && (await answered(b)) > 0,
  };
}

t.test('one replica, memory store', async (t) => passesEveryScenario(t, await oneReplica(t)));

t.test('two replicas sharing Redis, requests dealt round-robin', async (t) => {
  const pair = await twoReplicas(t);
  await passesEveryScenario(t, pair.url);
  t.ok(await pair.bothAnswered(), 'both replicas answered tasks/get');
});

t.test(
  'tools that are tasks by their own taskSupport only, default settings, two replicas sharing Redis',
  async (t) => {
    // A round answered on the other replica is handed to the holder, which takes the task over.
    const pair = await twoReplicas(t, plainUpstream.url);
    await passesEveryScenario(t, pair.url);
    t.ok(await pair.bothAnswered(), 'both replicas answered tasks/get');
    t.equal(plainUpstream.stats().tasksCreated, 0, 'the upstream ran no task of its own');
  },
);

// The fixture as it is and the one whose asking tools ask at once, side by side: most of each run is
// the suite waiting on tasks.
t.test('plain task tools, default settings, one replica each', { jobs: 2 }, async (t) => {
  t.test('tools that are tasks by their own taskSupport only, default settings', async (t) => {
    const url = await oneReplica(t, plainUpstream.url);
    const before = plainUpstream.stats();
    await passesEveryScenario(t, url);
    const after = plainUpstream.stats();
    t.equal(after.tasksCreated, 0, 'the upstream ran no task of its own');
    const slow = (stats: typeof before) => stats.toolCalls['slow_compute'] ?? 0;
    t.ok(slow(after) > slow(before), 'the task tools ran as plain calls');
    // The refusal is Causeway's own: a required tool called without the extension reaches nobody.
    const calls = after.toolCalls['failing_job'] ?? 0;
    const params = { name: 'failing_job', arguments: {} };
    const body = modernBody('tools/call', params, 'no-extension', { [META_CAPABILITIES]: {} });
    const refused = await post(url, body, modernHeaders('tools/call', 'failing_job'));
    t.equal(refused.json?.error?.code, -32021, 'without the extension: -32021');
    const extensions = refused.json?.error?.data?.requiredCapabilities?.extensions;
    t.ok(extensions?.['io.modelcontextprotocol/tasks'], 'naming the extension');
    t.equal(plainUpstream.stats().toolCalls['failing_job'] ?? 0, calls, 'and the upstream never saw the call');
  });

  t.test('tools that are tasks by their own taskSupport only and ask at once, with no progress first', async (t) => {
    // confirm_delete and multi_input (optional) ask before anything else: their question makes the
    // task and is its inputRequests; test_tool_with_task (required) still asks its round first.
    const url = await oneReplica(t, askFirstUpstream.url);
    await passesEveryScenario(t, url);
    const stats = askFirstUpstream.stats();
    t.equal(stats.tasksCreated, 0, 'the upstream ran no task of its own');
    const asked = ['confirm_delete', 'multi_input'].every((name) => (stats.toolCalls[name] ?? 0) > 0);
    t.ok(asked, 'the asking tools ran as plain calls');
  });
});
