// Standing GET streams per upstream, not per session (upstream.standingStream=auto, the default),
// all real processes: a non-persistent Redis, the legacy fixture (SDK 1.32.2 Streamable HTTP),
// Causeway replicas sharing the Redis, header principals.
// - An upstream that asks outside a call is learned from the one stream held anyway (its scout
//   session's), on every replica; from then on the sessions of clients that can be asked hold
//   their streams, on replicas started later too, and an ask on one reaches its call on the
//   other replica. A client that cannot be asked holds none.
// - A public list kept by the gateway cache is dropped on every replica when the upstream tells
//   its sessions of a change, though no client session's stream is held: the scout hears it.
// - A private list kept past its ttlMs on a change's word holds its session's own stream, from the
//   session's first request, and the change heard there drops it.
// - A new principal's server/discover relies on the tools the scout read, as its calls do.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { startLegacyServer, type LegacyServerOptions } from '../fixtures/legacy-server.js';
import { spawnCauseway, type Settings } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { metricValue } from '../helpers/metrics.js';
import { until } from '../helpers/until.js';
import { callTool, rpc, textOf, type CallOptions } from '../mrtr/wire.js';

const PRINCIPAL = 'x-causeway-principal';
const ROOTS = { roots: {} };

const as = (principal: string, caps: Record<string, unknown>): CallOptions => ({
  caps,
  headers: { [PRINCIPAL]: principal },
});

async function shared(t: Test, fixture: LegacyServerOptions) {
  const redis = await startRedis(t);
  t.teardown(() => redis.stop());
  const upstream = await startLegacyServer(fixture);
  t.teardown(() => upstream.close());
  const settings: Settings = {
    'upstream.name': 'fixture',
    'upstream.url': upstream.url,
    'upstream.requestTimeoutMs': 3_600_000,
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
    'principal.mode': 'header',
    'principal.hashSecret': randomBytes(32).toString('base64'),
    'subscriptions.keepAliveMs': 500,
  };
  return { upstream, settings };
}

t.test('streams_per_upstream-an_upstream_that_asks_outside_a_call_is_learned_on_every_replica', async (t) => {
  const { upstream, settings } = await shared(t, { asksWhenStreamOpens: 'every' });
  const [a, b] = await Promise.all([spawnCauseway(settings, { t }), spawnCauseway(settings, { t })]);
  const learned = (adminUrl: string | undefined) =>
    metricValue(adminUrl, 'causeway_upstream_asks_outside_calls', { upstream: 'fixture' });
  const open = () => upstream.stats().getStreamsOpen;

  t.equal(await learned(a.adminUrl), 0, 'nothing learned before any session');
  const first = await callTool(a.url, 'echo', { arguments: { text: 'one' } }, as('p1', ROOTS));
  t.equal(textOf(first), 'one');
  // The first session whose client can be asked brings the upstream's scout, whose stream the
  // server asks on as soon as it opens: Causeway refuses that ask (nobody calls on the scout) and learns.
  await until(async () => (await learned(a.adminUrl)) === 1 && (await learned(b.adminUrl)) === 1, {
    what: 'both replicas to learn that the upstream asks outside a call',
  });
  t.match(upstream.stats().outsideAnswers[0], { error: { code: -32601 } }, "the scout's ask was refused at once");
  await until(() => open() === 2, { what: "p1's own stream beside the scout's" });

  await t.test('a session opened after learning holds its stream from its first call', async (t) => {
    const r = await callTool(b.url, 'echo', { arguments: { text: 'two' } }, as('p2', ROOTS));
    t.equal(textOf(r), 'two');
    await until(() => open() === 3, { what: "p2's stream" });
  });

  await t.test('a client that cannot be asked holds none', async (t) => {
    const opened = upstream.stats().getStreamsOpened;
    const r = await callTool(a.url, 'echo', { arguments: { text: 'three' } }, as('p3', {}));
    t.equal(textOf(r), 'three');
    // A stream wanted for a session this replica opened is up before its first answer goes out.
    t.equal(upstream.stats().getStreamsOpened, opened, 'no GET stream opened for p3');
    t.equal(open(), 3);
  });

  await t.test("an ask on p2's stream (held by B) reaches p2's call on A", async (t) => {
    const r1 = await callTool(a.url, 'roots_outside', {}, as('p2', ROOTS));
    t.equal(r1.body.result?.resultType, 'input_required', 'the ask came back as a round of the call');
    const keys = Object.keys(r1.body.result?.inputRequests ?? {});
    t.same(r1.body.result?.inputRequests?.[keys[0]!], { method: 'roots/list', params: {} });
    const answer = { [keys[0]!]: { roots: [{ uri: 'file:///work', name: 'work' }] } };
    const done = await callTool(
      b.url,
      'roots_outside',
      { inputResponses: answer, requestState: r1.body.result.requestState },
      as('p2', ROOTS),
    );
    t.equal(done.body.result?.resultType, 'complete');
    t.equal(textOf(done), 'roots=1; first=file:///work', "the tool got the client's answer");
  });

  await t.test('a replica started later knows it from Redis', async (t) => {
    const c = await spawnCauseway(settings, { t });
    await until(async () => (await learned(c.adminUrl)) === 1, { what: 'C to read what A learned' });
    const r = await callTool(c.url, 'echo', { arguments: { text: 'four' } }, as('p4', ROOTS));
    t.equal(textOf(r), 'four');
    await until(() => open() === 4, { what: "p4's stream, held from its first call" });
  });
});

t.test('streams_per_upstream-a_public_list_change_is_heard_on_the_scout_by_every_replica', async (t) => {
  const { upstream, settings } = await shared(t, {});
  const cached: Settings = {
    ...settings,
    'cache.store': 'redis',
    'cache.methods': JSON.stringify({ 'tools/list': { ttlMs: 60_000, scope: 'public' } }),
  };
  const [a, b] = await Promise.all([spawnCauseway(cached, { t }), spawnCauseway(cached, { t })]);
  const lists = () => upstream.stats().requestsByMethod['tools/list'] ?? 0;
  const names = async (url: string, principal: string): Promise<string[]> => {
    const r = await rpc(url, 'tools/list', {}, as(principal, {}));
    return ((r.body?.result?.tools ?? []) as Array<{ name: string }>).map((x) => x.name);
  };

  const hits = (adminUrl: string | undefined) =>
    metricValue(adminUrl, 'causeway_cache_hits_total', { method: 'tools/list', scope: 'public' });
  const before = await names(a.url, 'p1');
  t.notOk(before.includes('test_dynamic_tool'));
  await until(() => upstream.stats().getStreamsOpen === 1, { what: "the upstream's scout stream" });
  const hitsOnB = await hits(b.adminUrl);
  t.same(await names(b.url, 'p2'), before, "B serves the list A kept, to another principal's session");
  t.equal(await hits(b.adminUrl), hitsOnB + 1, 'from the cache, without asking the upstream');
  // The scouts read their tools on their own (pool/session-facts.ts): the clients' lists are counted by the cache.
  const listed = lists();

  // The fixture tells every session of the change; no client session's stream is held.
  t.equal(textOf(await callTool(a.url, 'test_trigger_tool_change', {}, as('p1', {}))), 'Mutation triggered');
  await until(async () => (await names(b.url, 'p2')).includes('test_dynamic_tool'), {
    what: 'B to serve the changed list',
  });
  t.ok((await names(a.url, 'p1')).includes('test_dynamic_tool'), 'A serves the changed list');
  t.ok(lists() > listed, 'the changed list was read from the upstream');
  t.equal(upstream.stats().getStreamsOpen, 1, "only the scout's stream was ever held");
  t.equal(upstream.stats().getStreamsOpened, 1);
});

t.test('streams_per_upstream-a_private_list_kept_on_a_changes_word_holds_its_sessions_streams', async (t) => {
  // One replica, memory store: a client that cannot be asked, whose prompts/list the cache keeps
  // privately past its ttlMs only because its session's own stream tells of a change.
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const causeway = await spawnCauseway(
    {
      'upstream.url': upstream.url,
      'principal.mode': 'header',
      'principal.hashSecret': randomBytes(32).toString('base64'),
      'cache.methods': JSON.stringify({ 'prompts/list': { ttlMs: 60_000, scope: 'private' } }),
    },
    { t },
  );
  const prompts = async () => {
    const r = await rpc(causeway.url, 'prompts/list', {}, as('p1', {}));
    return ((r.body?.result?.prompts ?? []) as Array<{ name: string }>).map((x) => x.name);
  };
  const listed = () => upstream.stats().requestsByMethod['prompts/list'] ?? 0;

  t.notOk((await prompts()).includes('test_dynamic_prompt'));
  // Held from the session's first request, though nothing was learned and its client cannot be asked.
  t.equal(upstream.stats().getStreamsOpen, 1, "the session's own stream");
  t.equal(upstream.stats().scoutInitializeCount, 0, 'no scout: no public list kept, no client that can be asked');
  const read = listed();
  t.notOk((await prompts()).includes('test_dynamic_prompt'), 'kept');
  t.equal(listed(), read, 'served from the cache');

  t.equal(textOf(await callTool(causeway.url, 'test_trigger_prompt_change', {}, as('p1', {}))), 'Mutation triggered');
  await until(async () => (await prompts()).includes('test_dynamic_prompt'), {
    what: 'the change heard on the session stream to drop the kept list',
  });
  t.ok(listed() > read, 'read again from the upstream');
});

t.test('streams_per_upstream-new_principals_discover_on_the_scouts_tools', async (t) => {
  // Tools that say they are tasks on an upstream that runs none itself: whether server/discover
  // advertises the tasks extension hangs on the tools. Once the scout read them, a new principal's
  // discover relies on what it listed, as a call does, and reads no tools/list of its own.
  const upstream = await startLegacyServer({ plainTasks: true });
  t.teardown(() => upstream.close());
  const causeway = await spawnCauseway(
    {
      'upstream.url': upstream.url,
      'principal.mode': 'header',
      'principal.hashSecret': randomBytes(32).toString('base64'),
    },
    { t },
  );
  const lists = () => upstream.stats().requestsByMethod['tools/list'] ?? 0;
  let n = 0;
  const discover = async () => {
    const r = await rpc(causeway.url, 'server/discover', {}, as(`d${n++}`, ROOTS));
    return r.body?.result?.capabilities?.extensions?.['io.modelcontextprotocol/tasks'] !== undefined;
  };
  await until(
    async () => {
      const before = lists();
      return (await discover()) && lists() === before;
    },
    { what: "a new principal's discover to advertise tasks on the scout's tools alone" },
  );
  const read = lists();
  const opened = upstream.stats().initializeCount;
  for (let i = 0; i < 5; i++) t.ok(await discover(), 'the tasks extension advertised');
  t.equal(upstream.stats().initializeCount, opened + 5, 'five new sessions');
  t.equal(lists(), read, 'and no tools/list read for them');
});
