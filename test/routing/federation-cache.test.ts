// A federated mount's merged lists are served from what the members' gateway caches kept: each
// legacy member's whole list is kept under the member's cache.* policy, a 2026 member's as its
// own ttlMs and cacheScope say, so merges of lists that did not
// change ask no member again, and a member's list_changed drops what was kept of it (and of no
// other member). No request's parameters can name a kept whole list.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { cacheQuery, privateKey, publicKey, wholeListQuery } from '../../src/cache/keys.js';
import { modernBody, modernHeaders, post, toolCall } from '../e2e/wire.js';

const redis = await startRedis(t);
const a = await startLegacyServer({ label: 'a' });
const b = await startLegacyServer({ label: 'b' });
const c = await startModernServer({
  label: 'c',
  cacheHints: { 'tools/list': { ttlMs: 60_000, cacheScope: 'private' } },
});
const causeway = await startCauseway({
  upstreams: JSON.stringify({ a: { url: a.url }, b: { url: b.url }, c: { url: c.url } }),
  mounts: JSON.stringify({ '/all': { upstreams: ['a', 'b', 'c'], pageSize: 200 } }),
  'cache.methods': JSON.stringify({ 'tools/list': { ttlMs: 60_000, scope: 'private' } }),
  // Each member's session holds its GET stream, which carries the list_changed a change sends,
  // and the replica hears what it carries (with Redis, as in a deployment of replicas).
  'upstream.standingStream': 'always',
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
});
t.teardown(async () => {
  await causeway.close();
  await a.close();
  await b.close();
  await c.close();
});
const url = new URL('/all', causeway.app.origin!).href;
const listed = () => ({
  a: a.stats().requestsByMethod['tools/list'] ?? 0,
  b: b.stats().requestsByMethod['tools/list'] ?? 0,
  c: c.stats().requestsByMethod['tools/list'] ?? 0,
});
const names = async (params = {}): Promise<string[]> => {
  const r = await post(url, modernBody('tools/list', params), modernHeaders('tools/list'));
  if (r.status !== 200) throw new Error(`tools/list: HTTP ${r.status}`);
  return (r.json.result.tools as Array<{ name: string }>).map((x) => x.name);
};

t.test('20 merged tools/list cost each member one upstream list', async (t) => {
  const first = await names();
  t.ok(
    ['a__', 'b__', 'c__'].every((p) => first.some((n) => n.startsWith(p))),
    'every member listed, the 2026 one too',
  );
  for (let i = 1; i < 20; i++) t.same(await names(), first, `merge ${i + 1} is the same list`);
  // Since each member started: the mount's start-up check of names lists for the anonymous
  // principal too, and shares what it read with these merges.
  t.same(listed(), { a: 1, b: 1, c: 1 }, 'one upstream tools/list per member');
});

t.test("a member's list_changed drops its kept list, and only its own", async (t) => {
  const first = await names();
  const before = listed();
  const call = toolCall('a__test_trigger_tool_change', {});
  const r = await post(url, call.body, call.headers);
  t.equal(r.status, 200, 'the tool that changes a list ran on member a');
  // The notification comes on member a's streams: the next merge that differs shows it was heard.
  const changed = await until(
    async () => {
      const now = await names();
      return now.join() !== first.join() && now;
    },
    { what: "the merged list to show member a's change" },
  );
  t.ok(
    changed.includes('a__test_dynamic_tool') !== first.includes('a__test_dynamic_tool'),
    "a's dynamic tool came or went",
  );
  const after = listed();
  t.ok(after.a > before.a, 'member a was listed again');
  t.equal(after.b, before.b, 'member b was not');
  t.equal(after.c, before.c, 'nor the 2026 member c');
});

t.test("no client's parameters name the kept whole list", async (t) => {
  // A whole list's key ends in `*`, past where any request's parameters are written.
  for (const params of [{}, { '*': true }, { cursor: '*' }]) {
    const asked = cacheQuery('a', 'tools/list', params, 'who', undefined);
    const whole = wholeListQuery('a', 'tools/list', 'who', undefined);
    t.not(publicKey(asked), publicKey(whole), `not for ${JSON.stringify(params)}`);
    t.not(privateKey(asked), privateKey(whole));
  }
});
