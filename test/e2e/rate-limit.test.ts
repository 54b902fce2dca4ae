// limits.ratePerSecond: each principal's bucket, in one replica's memory or shared through Redis by
// two replicas; over it, 429 rate_limited with Retry-After before anything goes upstream. The
// refill rate is so low (one token in ~17 min) that no outcome depends on the machine's speed.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { spawnCauseway, startCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { spawnFixture } from './upstreams.js';
import { modernBody, modernHeaders, type Json } from './wire.js';

const SECRET = 'rate-limit-test-hash-secret-0123456789';
const fixture = await spawnFixture();
t.teardown(() => fixture.kill());

const limited = {
  'upstream.url': fixture.url,
  'principal.mode': 'header',
  'principal.header': 'x-user',
  'principal.hashSecret': SECRET,
  'limits.ratePerSecond': 0.001,
  'limits.rateBurst': 2,
};

let nextId = 1;
async function discover(
  cw: RunningCauseway,
  user: string,
): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const res = await fetch(cw.url, {
    method: 'POST',
    headers: { ...modernHeaders('server/discover'), 'x-user': user },
    body: JSON.stringify(modernBody('server/discover', {}, nextId++)),
  });
  const text = await res.text();
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: text.startsWith('{') ? JSON.parse(text) : text,
  };
}

async function legacyPost(cw: RunningCauseway, user: string): Promise<{ status: number; retryAfter: string | null }> {
  const res = await fetch(cw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-user': user },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'rate-test', version: '1' } },
    }),
  });
  await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after') };
}

const initializeCount = async () => (await fixture.stats()).initializeCount;

t.test(
  'in memory: a principal gets its burst, then 429 with Retry-After; another principal is not held back',
  async (t) => {
    const cw = await startCauseway(limited);
    t.teardown(() => cw.close());
    t.equal((await discover(cw, 'alice')).status, 200);
    t.equal((await discover(cw, 'alice')).status, 200);
    const before = await initializeCount();
    const over = await discover(cw, 'alice');
    t.equal(over.status, 429, 'third request of the burst of two');
    t.equal(over.body.error.code, -32000);
    t.match(over.body.error.message, /Rate limit exceeded/);
    t.ok(Number(over.retryAfter) >= 1, `Retry-After in whole seconds (${over.retryAfter})`);
    const legacy = await legacyPost(cw, 'alice');
    t.equal(legacy.status, 429, 'a legacy request spends the same bucket');
    t.equal(await initializeCount(), before, 'nothing refused reached the upstream');
    t.equal((await discover(cw, 'bob')).status, 200, 'another principal has its own bucket');
  },
);

t.test('per method: a bucket for tools/call that other methods do not spend, modern and legacy alike', async (t) => {
  const cw = await startCauseway({
    ...limited,
    'limits.ratePerSecond': 0,
    'limits.rateMethods': JSON.stringify({ 'tools/call': { ratePerSecond: 0.001, burst: 2 } }),
  });
  t.teardown(() => cw.close());
  const call = async (user: string, method = 'tools/call') => {
    const params: Record<string, Json> = method === 'tools/call' ? { name: 'echo', arguments: { text: 'x' } } : {};
    const res = await fetch(cw.url, {
      method: 'POST',
      headers: { ...modernHeaders(method), ...(method === 'tools/call' ? { 'mcp-name': 'echo' } : {}), 'x-user': user },
      body: JSON.stringify(modernBody(method, params, nextId++)),
    });
    await res.text();
    return { status: res.status, retryAfter: res.headers.get('retry-after') };
  };
  t.equal((await call('frank')).status, 200);
  t.equal((await call('frank')).status, 200);
  const over = await call('frank');
  t.equal(over.status, 429, 'the third call of a burst of two');
  t.ok(Number(over.retryAfter) >= 1);
  for (let i = 0; i < 3; i++) t.equal((await call('frank', 'tools/list')).status, 200, 'tools/list has no bucket');
  t.equal((await call('grace')).status, 200, 'another principal has buckets of its own');

  const session = await fetch(cw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-user': 'frank' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'rate-test', version: '1' } },
    }),
  });
  t.equal(session.status, 200, 'a legacy initialize spends no tools/call token');
  await session.text();
  const legacyCall = await fetch(cw.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'x-user': 'frank',
      'mcp-session-id': session.headers.get('mcp-session-id')!,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 77,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'x' } },
    }),
  });
  t.equal(legacyCall.status, 429, 'a legacy tools/call spends the same bucket');
  t.match(await legacyCall.json(), { id: 77, error: { code: -32000 } });
});

t.test('off by default: no bucket, no 429', async (t) => {
  const cw = await startCauseway({ ...limited, 'limits.ratePerSecond': 0 });
  t.teardown(() => cw.close());
  for (let i = 0; i < 5; i++) t.equal((await discover(cw, 'carol')).status, 200);
});

t.test('with the Redis store, two replicas spend one bucket per principal', async (t) => {
  const redis = await startRedis();
  t.teardown(() => redis.stop());
  const stateKeys = randomBytes(32).toString('base64');
  const shared = { ...limited, 'store.kind': 'redis', 'store.redisUrl': redis.url, 'mrtr.stateKeys': stateKeys };
  const [a, b] = await Promise.all([spawnCauseway(shared), spawnCauseway(shared)]);
  t.teardown(() => Promise.all([a.close(), b.close()]));
  t.equal((await discover(a, 'dave')).status, 200);
  t.equal((await discover(b, 'dave')).status, 200);
  const over = await discover(a, 'dave');
  t.equal(over.status, 429, 'replica A saw the token replica B took');
  t.ok(Number(over.retryAfter) >= 1);
  t.equal((await discover(b, 'dave')).status, 429, 'and B sees the bucket empty too');
  t.equal((await discover(b, 'erin')).status, 200, 'another principal is not held back');
  t.ok((await redis.admin.keys('*rate:*')).length >= 2, 'the buckets live in Redis');
  await redis.kill();
  t.equal((await discover(a, 'dave')).status, 200, 'a Redis that cannot be reached lets requests through');
});
