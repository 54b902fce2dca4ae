// subscriptions/listen take-over after the GET-stream holder dies [SUBS], all real processes: one
// Redis, the legacy fixture (its event store keeps the standalone stream's events), two Causeway
// replicas. A listener on A makes A the holder, one on B only hears the bus; A is SIGKILLed and
// the upstream sends changes while nobody holds the stream. B takes the stream over once A's
// lease heartbeat is missed (subscriptions.takeoverMs), resumes it with the Last-Event-ID A shared
// in Redis, and so gets every change of the gap from the upstream's replay, each once, with no
// "everything may have changed" notifications. The keep-alive tick is put out of reach, so that a
// take-over at all shows it came from the heartbeat; the time from kill to the first resumed
// change is printed, not bounded (the machine may be busy).

import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { spawnCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { rawListen } from '../helpers/listen.js';
import { until } from '../helpers/until.js';
import { spawnFixture } from './upstreams.js';
import { post, toolCall } from './wire.js';

const WATCHED = 'test://watched-resource';
const TAKEOVER_MS = 1000;

let triggers = 0;
async function trigger(url: string, tool: string): Promise<void> {
  const { body, headers } = toolCall(tool, {}, `trigger-${++triggers}`);
  const res = await post(url, body, headers);
  if (res.status !== 200) throw new Error(`${tool} answered HTTP ${res.status}: ${res.text}`);
}

const listen = (t: Test, url: string, id: string, notifications: Record<string, unknown>) =>
  rawListen(t, url, id, notifications, { silenceMs: 10_000 });

/** Methods read until `quietMs` pass with nothing. */
async function drain(next: (ms: number) => Promise<any | undefined>, quietMs: number): Promise<string[]> {
  const seen: string[] = [];
  for (;;) {
    try {
      const m = await next(quietMs);
      if (m === undefined) return seen;
      seen.push(m.method);
    } catch {
      return seen;
    }
  }
}

t.test('modern_client-to-legacy_upstream-listen-holder-killed-takeover-resumes-with-last-event-id', async (t) => {
  const redis = await startRedis(t);
  // Its admin client would keep reconnecting (and the test file running) after the server is gone.
  t.teardown(() => redis.stop());
  const upstream = await spawnFixture(0, { t });
  const settings = {
    'upstream.url': upstream.url,
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
    'subscriptions.takeoverMs': TAKEOVER_MS,
    // The take-over must not wait for the listen tick: at 10 minutes, waiting for it fails the
    // read of the first resumed change below.
    'subscriptions.keepAliveMs': 600_000,
    'admin.port': -1,
  };
  const [a, b] = await Promise.all([spawnCauseway(settings, { t }), spawnCauseway(settings, { t })]);
  const kinds = {
    toolsListChanged: true,
    promptsListChanged: true,
    resourcesListChanged: true,
    resourceSubscriptions: [WATCHED],
  };

  const onA = await listen(t, a.url, 'on-a', kinds);
  t.equal(onA.status, 200);
  t.equal(
    (await onA.next())?.method,
    'notifications/subscriptions/acknowledged',
    'A listens first, so A holds the GET stream',
  );
  const onB = await listen(t, b.url, 'on-b', kinds);
  t.equal(onB.status, 200);
  t.equal((await onB.next())?.method, 'notifications/subscriptions/acknowledged');
  const before = await upstream.stats();
  t.equal(before.getStreamsOpen, 1, 'one GET stream for two replicas');
  const lease = await redis.admin.keys('*listen-holder*');
  t.equal(lease.length, 1, 'one lease in Redis');

  // A change on A's stream reaches B over the bus, and A shares its event id.
  await trigger(b.url, 'test_trigger_tool_change');
  t.equal((await onB.next())?.method, 'notifications/tools/list_changed', 'before the kill: B hears A’s stream');
  t.equal((await onA.next())?.method, 'notifications/tools/list_changed');
  const cursorKey = (await redis.admin.keys('*listen-cursor*'))[0];
  t.ok(cursorKey, 'the holder shared a cursor');
  const cursor = await until(
    async () => {
      const now = await redis.admin.get(cursorKey!);
      return now?.includes('::') && now;
    },
    { what: 'the GET stream event id in the cursor' },
  );
  t.match(cursor, /^[0-9a-f]{16} _GET_stream::\d+$/, 'session mark and the GET stream event id');

  a.child.kill('SIGKILL');
  await new Promise((r) => a.child.once('exit', r));
  const killed = Date.now();
  // Changes while nobody holds the stream: the upstream keeps them in its event store.
  await trigger(b.url, 'test_trigger_tool_change');
  await trigger(b.url, 'test_trigger_prompt_change');
  await trigger(b.url, 'test_trigger_tool_change');
  await trigger(b.url, 'test_trigger_resource_update');

  // Far longer than the take-over needs, far shorter than the tick.
  const first = await onB.next(60_000);
  t.comment(`kill to first resumed notification: ${Date.now() - killed} ms (takeoverMs ${TAKEOVER_MS})`);
  // The four changes of the gap are read however slowly they come; then nothing more may.
  const seen = [first?.method];
  while (seen.length < 4) seen.push((await onB.next(60_000))?.method);
  seen.push(...(await drain(onB.next, 1500)));
  const n = (m: string) => seen.filter((x) => x === m).length;
  t.equal(n('notifications/tools/list_changed'), 2, `each tools change of the gap, once (${seen.join(', ')})`);
  t.equal(n('notifications/prompts/list_changed'), 1, 'the prompts change');
  t.equal(n('notifications/resources/updated'), 1, 'the resource update');
  t.equal(n('notifications/resources/list_changed'), 0, 'no over-notifying: the resume replayed what was missed');
  t.equal(seen.length, 4, 'nothing else');
  t.ok(
    b.logs.some((l) => l.includes('resumed the GET stream')),
    'B resumed with Last-Event-ID',
  );

  const after = await upstream.stats();
  t.equal(after.getStreamsOpen, 1, 'B holds the one GET stream');
  t.equal(after.getStreamsOpened - before.getStreamsOpened, 1, 'opened once, by B');

  await trigger(b.url, 'test_trigger_prompt_change');
  t.equal((await onB.next())?.method, 'notifications/prompts/list_changed', 'changes keep flowing');
});
