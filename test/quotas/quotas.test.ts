// quotas: a tenant's calls counted across three replicas on one Redis, the tenant named by the
// access token's `tenant` claim, so two clients of one tenant spend one quota. Exactly the limit
// gets through; then 429 with Retry-After and a JSON-RPC error whose data names the quota, its
// window and when it resets, and the upstream sees none of the refused calls. Another tenant, and
// the same tenant's other tools under a per-tool quota, are not held back. Each window is a minute
// or longer and starts at the first counted call, so no outcome depends on the machine's speed.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { jwtFace, protectedResource, startAuthorizationServer } from '../helpers/authorization-server.js';
import { startRedis } from '../helpers/redis.js';
import { spawnFixture } from '../e2e/upstreams.js';
import { modernBody, modernHeaders } from '../e2e/wire.js';

const fixture = await spawnFixture();
t.teardown(() => fixture.kill());
const redis = await startRedis(t);
const { port, resource } = await protectedResource();
const as = await startAuthorizationServer(t, {
  resources: { [resource]: 'jwt' },
  scopes: ['mcp'],
  clients: ['acme-ops', 'acme-bot', 'globex'],
  tenants: { 'acme-ops': 'acme', 'acme-bot': 'acme', globex: 'globex' },
});
const settings = {
  ...jwtFace(as, port, resource),
  'upstream.url': fixture.url,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
  'quotas.rules': JSON.stringify({
    calls: { limit: 100, per: 'minute' },
    images: { limit: 2, per: 'hour', name: 'test_image_*' },
  }),
};
// Three replicas behind one resource: each listens on a port of its own.
const replicas: RunningCauseway[] = [];
for (const [i, p] of [port, 0, 0].entries()) {
  const cw = await startCauseway({ ...settings, 'listen.port': p });
  t.teardown(() => cw.close());
  replicas[i] = cw;
}
const tokens = {
  ops: await as.token({ client: 'acme-ops', resource, scope: 'mcp' }),
  bot: await as.token({ client: 'acme-bot', resource, scope: 'mcp' }),
  globex: await as.token({ client: 'globex', resource, scope: 'mcp' }),
};

let nextId = 1;
async function call(replica: number, token: string, name: string) {
  const res = await fetch(replicas[replica]!.url, {
    method: 'POST',
    headers: { ...modernHeaders('tools/call'), 'mcp-name': name, authorization: `Bearer ${token}` },
    body: JSON.stringify(modernBody('tools/call', { name, arguments: { text: 'q' } }, nextId++)),
  });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: JSON.parse(text) };
}
const callsOf = async (tool: string) => (await fixture.stats()).toolCalls[tool] ?? 0;

t.test('a tenant of two clients gets exactly 100 calls a minute across three replicas, then 429', async (t) => {
  const before = await callsOf('echo');
  const statuses: number[] = [];
  let refused: Awaited<ReturnType<typeof call>> | undefined;
  for (let i = 0; i < 110; i++) {
    const answer = await call(i % 3, i % 2 === 0 ? tokens.ops : tokens.bot, 'echo');
    statuses.push(answer.status);
    if (answer.status === 429) refused ??= answer;
  }
  t.equal(statuses.filter((s) => s === 200).length, 100, 'exactly the limit got through');
  t.same(statuses.slice(100), Array(10).fill(429), 'and every call after it was refused');
  t.equal((await callsOf('echo')) - before, 100, 'the upstream saw the 100 and none of the refused');
  t.ok(Number(refused!.retryAfter) >= 1 && Number(refused!.retryAfter) <= 60, `Retry-After ${refused!.retryAfter}`);
  t.match(refused!.body, {
    error: { code: -32000, data: { quota: 'calls', limit: 100, window: 'minute', retryAfterSeconds: Number } },
  });
  const resetsAt = Date.parse(refused!.body.error.data.resetsAt);
  t.ok(resetsAt > Date.now() && resetsAt <= Date.now() + 60_000, 'it resets within the minute');

  t.equal((await call(1, tokens.globex, 'echo')).status, 200, 'another tenant is not held back');
});

t.test('a per-tool quota stops that tool only', async (t) => {
  t.equal((await call(0, tokens.globex, 'test_image_content')).status, 200);
  t.equal((await call(1, tokens.globex, 'test_image_content')).status, 200);
  const before = await callsOf('test_image_content');
  const over = await call(2, tokens.globex, 'test_image_content');
  t.equal(over.status, 429, 'the third image call in the hour');
  t.match(over.body.error.data, { quota: 'images', limit: 2, window: 'hour' });
  t.equal(await callsOf('test_image_content'), before, 'it never reached the upstream');
  t.equal((await call(2, tokens.globex, 'echo')).status, 200, 'the tenant calls its other tools');
});

t.test('a legacy client of a spent tenant gets the same 429 on its tools/call', async (t) => {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${tokens.bot}`,
  };
  const init = await fetch(replicas[0]!.url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'quota-test', version: '1' } },
    }),
  });
  t.equal(init.status, 200, 'initialize counts against no quota');
  await init.text();
  const session = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  const res = await fetch(replicas[1]!.url, {
    method: 'POST',
    headers: { ...headers, ...session },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } }),
  });
  t.equal(res.status, 429);
  t.ok(Number(res.headers.get('retry-after')) >= 1);
  t.match(await res.json(), { id: 2, error: { code: -32000, data: { quota: 'calls' } } });
});

t.test('each refusal and counted call is in causeway_quota_*, by quota name only', async (t) => {
  const texts = await Promise.all(replicas.map(async (r) => (await fetch(`${r.adminUrl}/metrics`)).text()));
  const sum = (name: string, quota: string) =>
    texts
      .map((text) => new RegExp(`^${name}\\{quota="${quota}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? '0')
      .reduce((a, n) => a + Number(n), 0);
  t.equal(sum('causeway_quota_refusals_total', 'calls'), 11, '10 modern and 1 legacy refusal');
  t.equal(sum('causeway_quota_refusals_total', 'images'), 1);
  t.equal(sum('causeway_quota_calls_total', 'images'), 2);
  t.notOk(texts.join('\n').includes('acme'), 'no tenant in any label');
});
