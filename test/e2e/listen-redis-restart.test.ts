// GET-stream hand-overs after a lost Redis must not fight [SUBS], all real processes: one
// non-persistent Redis, the legacy fixture (SDK Streamable HTTP: one GET stream per session, a
// second one refused with 409), two Causeway replicas. Four pooled sessions (one per principal),
// each listened on both replicas, the first listener's replica holding its GET stream: two streams
// on A, two on B. Redis is then restarted empty, so every lease is gone while both replicas still
// hold their streams. Within 2 s of the restart the upstream sends a list change on each session:
// every listener must get it, and the upstream must have refused no GET with 409 (a replica
// taking over a stream its holder still keeps open). Once the dust settles each stream is held,
// and leased, where it was before, and was never re-opened.

import { randomBytes } from 'node:crypto';
import t from 'tap';
import { spawnCauseway } from '../helpers/causeway.js';
import { rawListen, type RawListen } from '../helpers/listen.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { spawnFixture } from './upstreams.js';
import { modernHeaders, post, toolCall } from './wire.js';

const PRINCIPALS = ['p0', 'p1', 'p2', 'p3'];
const TOOLS_CHANGED = 'notifications/tools/list_changed';

t.test('modern_client-to-legacy_upstream-listen-redis-restarted-empty-holders-keep-their-streams', async (t) => {
  const redis = await startRedis(t);
  // Its admin client would keep reconnecting (and the test file running) after the server is gone.
  t.teardown(() => redis.stop());
  const upstream = await spawnFixture(0, { t });
  const settings = {
    'upstream.url': upstream.url,
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
    'principal.mode': 'header',
    'principal.hashSecret': randomBytes(32).toString('base64'),
    'subscriptions.takeoverMs': 1000,
    // The tick runs often, so that a channel in doubt about its lease asks again while Redis comes back.
    'subscriptions.keepAliveMs': 250,
    'admin.port': -1,
  };
  const replicas = await Promise.all([spawnCauseway(settings, { t }), spawnCauseway(settings, { t })]);

  const as = (principal: string) => ({ 'x-causeway-principal': principal });
  const listen = async (url: string, principal: string): Promise<RawListen> => {
    const l = await rawListen(
      t,
      url,
      `listen-${principal}`,
      { toolsListChanged: true },
      { silenceMs: 15_000, init: { headers: { ...modernHeaders('subscriptions/listen'), ...as(principal) } } },
    );
    t.equal(l.status, 200);
    t.equal((await l.next())?.method, 'notifications/subscriptions/acknowledged', `${principal} acknowledged`);
    return l;
  };
  let triggers = 0;
  const trigger = async (url: string, principal: string) => {
    const { body, headers } = toolCall('test_trigger_tool_change', {}, `trigger-${++triggers}`);
    const res = await post(url, body, { ...headers, ...as(principal) });
    if (res.status !== 200) throw new Error(`the trigger answered HTTP ${res.status}: ${res.text}`);
  };

  // Principal i listens first on replica i % 2, which so holds its stream; then on the other one.
  const listeners: Array<{ name: string; listen: RawListen }> = [];
  for (const [i, p] of PRINCIPALS.entries()) {
    for (const r of [i % 2, (i + 1) % 2]) {
      listeners.push({ name: `${p} on ${'AB'[r]}`, listen: await listen(replicas[r]!.url, p) });
    }
  }
  const before = await upstream.stats();
  t.equal(before.getStreamsOpen, PRINCIPALS.length, 'one GET stream per session');
  const leases = async () => {
    const out: Record<string, string> = {};
    for (const k of (await redis.admin.keys('*listen-holder*')).sort())
      out[k] = (await redis.admin.get(k))!.split(':')[0]!;
    return out;
  };
  const held = await leases();
  t.equal(Object.keys(held).length, PRINCIPALS.length, 'one lease per session');
  t.equal(new Set(Object.values(held)).size, 2, 'both replicas hold streams');

  // A change on each session before the restart reaches all its listeners.
  for (const [i, p] of PRINCIPALS.entries()) await trigger(replicas[i % 2]!.url, p);
  for (const l of listeners) t.equal((await l.listen.next())?.method, TOOLS_CHANGED, `before: ${l.name}`);

  await redis.restart();
  const restarted = Date.now();
  // Within 2 s of the restart, a change on each session, through the replica that does not hold its stream.
  for (const [i, p] of PRINCIPALS.entries()) await trigger(replicas[(i + 1) % 2]!.url, p);
  const sent = Date.now() - restarted;
  t.ok(sent < 2000, `the changes were sent ${sent} ms after the restart`);

  // Each listener hears it (or "everything may have changed", which says the same); nothing else counts.
  for (const l of listeners) {
    let m: any;
    do m = await l.listen.next(30_000);
    while (m !== undefined && m.method !== TOOLS_CHANGED);
    t.equal(m?.method, TOOLS_CHANGED, `after the restart: ${l.name}`);
  }
  // Settled: every stream leased again, by the replica that held it before.
  await until(async () => JSON.stringify(await leases()) === JSON.stringify(held), {
    what: 'every lease restated by its holder',
    timeoutMs: 10_000,
  }).catch(() => undefined);
  t.same(await leases(), held, 'every lease restated by the replica that held it');
  const after = await upstream.stats();
  const refused = after.getStreamsRefused - before.getStreamsRefused;
  t.equal(refused, 0, `no GET refused with 409 (${refused})`);
  const reopened = after.getStreamsOpened - before.getStreamsOpened;
  t.equal(reopened, 0, `no stream re-opened: the holders kept theirs (${reopened})`);
  t.equal(after.getStreamsOpen, PRINCIPALS.length);

  // And changes keep flowing.
  for (const [i, p] of PRINCIPALS.entries()) await trigger(replicas[i % 2]!.url, p);
  for (const l of listeners) {
    let m: any;
    do m = await l.listen.next(30_000);
    while (m !== undefined && m.method !== TOOLS_CHANGED);
    t.equal(m?.method, TOOLS_CHANGED, `later: ${l.name}`);
  }
  const last = await upstream.stats();
  t.equal(last.getStreamsRefused - before.getStreamsRefused, 0, 'still no GET refused');
  for (const l of listeners) l.listen.close();
  // Drained while Redis is up (the teardowns stop everything too, in any order, should this not be reached).
  await Promise.all(replicas.map((r) => r.close()));
});
