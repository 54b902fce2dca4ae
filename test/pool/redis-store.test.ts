// The SessionStore contract, run against a real redis-server (started here on a free port) and
// against MemorySessionStore; then what only the Redis store has: key layout, TTLs, ACL users,
// timeouts, fail-fast when Redis is away, and the config-driven construction.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import {
  createRedisClient,
  createStore,
  MemorySessionStore,
  recordTtlMs,
  RedisSessionStore,
  type SessionRecord,
  type SessionStore,
} from '../../src/pool/index.js';
import { freePort, startRedis } from '../helpers/redis.js';

const redis = await startRedis();
t.teardown(() => redis.stop());
const log = createLogger('silent');

let prefixes = 0;
const RECORD_TTL = 60_000;

function unconnected(prefix: string, commandTimeoutMs = 1000): RedisSessionStore {
  const store = new RedisSessionStore(
    createRedisClient({ url: redis.url, commandTimeoutMs }),
    { keyPrefix: prefix, recordTtlMs: RECORD_TTL },
    log,
  );
  t.teardown(() => store.close());
  return store;
}

/** Connected: with no offline queue, a command sent before the connection is ready fails. */
async function redisStore(prefix = `t${++prefixes}:`, commandTimeoutMs = 1000): Promise<RedisSessionStore> {
  const store = unconnected(prefix, commandTimeoutMs);
  if (!(await store.ready(5000))) throw new Error('test redis not ready');
  return store;
}

function rec(key: string, over: Partial<SessionRecord> = {}): SessionRecord {
  return {
    key,
    sessionId: `sid-${key}`,
    protocolVersion: '2025-11-25',
    initializeResult: {
      protocolVersion: '2025-11-25',
      capabilities: { tools: {} },
      serverInfo: { name: 'fx', version: '1' },
    },
    createdAt: 1_700_000_000_000,
    lastUsedAt: 1_700_000_000_000,
    generation: 1,
    ...over,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function contract(name: string, make: () => Promise<SessionStore>): void {
  t.test(`${name}: contract`, async (t: Test) => {
    t.test('insert-if-absent', async (t) => {
      const s = await make();
      t.equal(await s.get('k'), undefined);
      const a = rec('k');
      t.same(await s.insert(a), a, 'the inserted record comes back');
      t.same(await s.get('k'), a, 'and is stored, field for field');
      const b = rec('k', { sessionId: 'other', generation: 7 });
      t.same(await s.insert(b), a, 'a second insert gets the first record');
      t.same(await s.get('k'), a, 'which stays');
      const sessionless = rec('nosid', { sessionId: undefined });
      await s.insert(sessionless);
      const got = await s.get('nosid');
      t.equal(got?.sessionId, undefined, 'a sessionless record keeps no session id');
      t.same(got?.initializeResult, sessionless.initializeResult);
    });

    t.test('replace: compare-and-set on generation', async (t) => {
      const s = await make();
      const g1 = rec('k');
      await s.insert(g1);
      const g3 = rec('k', { sessionId: 'three', generation: 3 });
      t.same(await s.replace(2, g3), g1, 'a stale expectation loses and sees the stored record');
      const g2 = rec('k', { sessionId: 'two', generation: 2 });
      t.same(await s.replace(1, g2), g2, 'the right expectation wins');
      t.same(await s.get('k'), g2);
      t.same(await s.replace(1, g3), g2, 'the loser of a race sees the winner');
      const fresh = rec('absent', { generation: 4 });
      t.same(await s.replace(3, fresh), fresh, 'replacing nothing stores the record');
      const noSid = rec('k', { sessionId: undefined, generation: 3 });
      await s.replace(2, noSid);
      t.equal((await s.get('k'))?.sessionId, undefined, 'a replacement drops fields the new record lacks');
    });

    t.test('the URL a session lives on is kept with it', async (t) => {
      const s = await make();
      await s.insert(rec('pooled', { target: 'http://replica-1:3000/mcp' }));
      t.equal((await s.get('pooled'))?.target, 'http://replica-1:3000/mcp');
      await s.replace(1, rec('pooled', { generation: 2 }));
      t.equal((await s.get('pooled'))?.target, undefined, 'a replacement on no particular URL keeps none');
    });

    t.test('remove: compare-and-delete on generation', async (t) => {
      const s = await make();
      await s.insert(rec('k', { generation: 5 }));
      t.equal(await s.remove('k', 4), false, 'wrong generation: kept');
      t.ok(await s.get('k'));
      t.equal(await s.remove('k', 5), true, 'right generation: removed');
      t.equal(await s.get('k'), undefined);
      t.equal(await s.remove('k', 5), false, 'only once');
      t.equal(await s.count(), 0);
    });

    t.test('lock / unlock with an owner', async (t) => {
      const s = await make();
      t.equal(await s.lock('k', 'A', 5000), true, 'A takes the lock');
      t.equal(await s.lock('k', 'B', 5000), false, 'B cannot');
      await s.unlock('k', 'B');
      t.equal(await s.lock('k', 'B', 5000), false, 'B cannot release what A holds');
      t.equal(await s.lock('k', 'A', 5000), true, 'A may renew its own lock');
      t.equal(await s.lock('other', 'B', 5000), true, 'locks are per key');
      await s.unlock('k', 'A');
      t.equal(await s.lock('k', 'B', 5000), true, 'after A releases, B takes it');
      t.equal(await s.lock('short', 'A', 60), true);
      await sleep(120); // lower bound: past the lock's 60 ms, which Redis expires by its clock
      t.equal(await s.lock('short', 'B', 5000), true, 'an expired lock is free');
      t.equal(await s.count(), 0, 'locks are not records');
    });

    t.test('claim: the record, or the creation lock, in one step', async (t) => {
      const s = await make();
      t.same(await s.claim('k', 'A', 5000), { state: 'claimed', record: undefined }, 'no record: A takes the lock');
      t.same(await s.claim('k', 'B', 5000), { state: 'locked', record: undefined }, 'B finds it taken');
      t.same(await s.claim('k', 'A', 5000), { state: 'claimed', record: undefined }, 'A renews its own');
      const g1 = rec('k');
      t.same(await s.insert(g1, 'A'), g1, 'A stores the record');
      t.same(await s.claim('k', 'B', 5000), { state: 'live', record: g1 }, 'B finds the record');
      t.same(
        await s.claim('k', 'B', 5000, 1),
        { state: 'claimed', record: g1 },
        'the record known dead: B takes the lock, and sees it',
      );
      t.same(await s.claim('k', 'A', 5000, 1), { state: 'locked', record: g1 }, 'A cannot while B holds it');
      const g2 = rec('k', { sessionId: 'two', generation: 2 });
      t.same(await s.replace(1, g2, 'B'), g2, 'B replaces it');
      t.same(
        await s.claim('k', 'A', 5000, 1),
        { state: 'live', record: g2 },
        'a newer record than the dead one is live',
      );
      t.same(
        await s.claim('other', 'A', 5000),
        { state: 'claimed', record: undefined },
        'the insert and replace released their locks',
      );
      t.equal(await s.lock('k', 'A', 5000), true, "B's replace released the lock of k");
      await s.unlock('k', 'A');
      t.equal(await s.count(), 1, 'locks are not records');
    });

    t.test('touch', async (t) => {
      const s = await make();
      await s.insert(rec('k', { lastUsedAt: 1000 }));
      await s.touch([{ key: 'k', lastUsedAt: 5000 }]);
      t.equal((await s.get('k'))?.lastUsedAt, 5000, 'moves last use forward');
      await s.touch([{ key: 'k', lastUsedAt: 3000 }]);
      t.equal((await s.get('k'))?.lastUsedAt, 5000, 'never backward');
      await s.touch([{ key: 'gone', lastUsedAt: 9000 }]);
      t.equal(await s.get('gone'), undefined, 'touching a missing record creates nothing');
      t.equal(await s.count(), 1);
      await s.touch([]);
    });

    t.test('idle: oldest first, bounded', async (t) => {
      const s = await make();
      await s.insert(rec('a', { lastUsedAt: 100 }));
      await s.insert(rec('b', { lastUsedAt: 200 }));
      await s.insert(rec('c', { lastUsedAt: 300 }));
      await s.insert(rec('d', { lastUsedAt: 10_000 }));
      t.same(
        (await s.idle(250, 10)).map((r) => r.key),
        ['a', 'b'],
      );
      t.same(
        (await s.idle(250, 1)).map((r) => r.key),
        ['a'],
      );
      t.same(
        (await s.idle(100, 10)).map((r) => r.key),
        [],
        'strictly before',
      );
      await s.touch([{ key: 'a', lastUsedAt: 400 }]);
      t.same(
        (await s.idle(250, 10)).map((r) => r.key),
        ['b'],
        'a touch takes a record out of idle',
      );
      const [b] = await s.idle(250, 10);
      t.same(b, rec('b', { lastUsedAt: 200 }), 'whole records');
      t.equal(await s.count(), 4);
      await s.remove('b', 1);
      t.same(
        (await s.idle(250, 10)).map((r) => r.key),
        [],
      );
      t.equal(await s.count(), 3);
    });
  });
}

contract('memory', async () => new MemorySessionStore());
contract('redis', () => redisStore());

t.test('redis: key layout, hash tags and prefix', async (t) => {
  const s = await redisStore('app1:');
  const id = 'default|principalHash|fingerprint';
  await s.insert(rec(id));
  await s.lock(id, 'A', 5000);
  const keys = (await redis.admin.keys('app1:*')).sort();
  t.same(keys, [s.indexKey(id), `app1:lock:{${id}}`, `app1:session:{${id}}`].sort());
  t.match(s.indexKey(id), /^app1:idle:\{\d+\}$/, 'the idle index is sharded by hash tag');
  const tagOf = (k: string) => /\{([^}]*)\}/.exec(k)?.[1];
  t.equal(tagOf(s.recordKey(id)), tagOf(s.lockKey(id)), 'record and lock share a Cluster hash tag (one slot)');
  t.same(Object.keys(await redis.admin.hgetall(`app1:session:{${id}}`)).sort(), [
    'createdAt',
    'generation',
    'initializeResult',
    'key',
    'lastUsedAt',
    'protocolVersion',
    'sessionId',
  ]);
  t.equal(await redis.admin.get(`app1:lock:{${id}}`), 'A', 'the lock holds its owner token');
  t.equal(
    await redis.admin.zscore(s.indexKey(id), id),
    String(rec(id).lastUsedAt),
    'the idle index scores by last use',
  );

  const other = await redisStore('app2:');
  t.equal(await other.get(id), undefined, 'another prefix sees nothing');
  t.equal(await other.count(), 0);

  const braces = 'up{stream}|p|f%7B';
  await s.insert(rec(braces));
  t.same(await s.get(braces), rec(braces), 'ids with braces round-trip');
  t.equal(tagOf(s.recordKey(braces)), 'up%7Bstream%7D|p|f%257B', 'braces and % are escaped inside the tag');
  t.throws(() => unconnected('bad{prefix}:'), /keyPrefix/, 'a prefix with braces is refused');
});

t.test('redis: TTLs', async (t) => {
  const s = await redisStore('ttl:');
  await s.insert(rec('k'));
  const ttl = await redis.admin.pttl('ttl:session:{k}');
  t.ok(ttl > RECORD_TTL - 2000 && ttl <= RECORD_TTL, `record TTL set (${ttl} ms)`);
  await redis.admin.pexpire('ttl:session:{k}', 1000);
  await s.touch([{ key: 'k', lastUsedAt: Date.now() }]);
  t.ok((await redis.admin.pttl('ttl:session:{k}')) > RECORD_TTL - 2000, 'touch refreshes the TTL');
  await s.replace(1, rec('k', { generation: 2 }));
  t.ok((await redis.admin.pttl('ttl:session:{k}')) > RECORD_TTL - 2000, 'replace sets the TTL');
  await s.lock('k', 'A', 3000);
  const lockTtl = await redis.admin.pttl('ttl:lock:{k}');
  t.ok(lockTtl > 0 && lockTtl <= 3000, `lock expires (${lockTtl} ms)`);
  t.equal(recordTtlMs(900_000), 990_000, 'a record outlives store.idleTtlMs by 10%…');
  t.equal(recordTtlMs(60_000), 90_000, '…and at least 30 s');
});

t.test('redis: touch is one pipelined batch of a ZADD per idle shard + PEXPIREs, no scripts', async (t) => {
  const s = await redisStore('batch:');
  for (const k of ['a', 'b', 'c']) await s.insert(rec(k));
  const before = await redis.commandStats();
  await s.touch(['a', 'b', 'c'].map((key) => ({ key, lastUsedAt: Date.now() })));
  const after = await redis.commandStats();
  const delta = Object.fromEntries(
    Object.keys(after)
      .map((k) => [k, after[k]! - (before[k] ?? 0)] as const)
      .filter(([k, d]) => d > 0 && k !== 'info'),
  );
  const shards = new Set(['a', 'b', 'c'].map((k) => s.indexKey(k))).size;
  t.same(delta, { zadd: shards, pexpire: 3 });
});

t.test('redis: ACL user and password from the URL or settings', async (t) => {
  await redis.admin.call('ACL', 'SETUSER', 'causeway', 'on', '>s3cret-pass', '~*', '+@all');
  t.teardown(() => redis.admin.call('ACL', 'DELUSER', 'causeway'));
  const viaUrl = new RedisSessionStore(
    createRedisClient({ url: `redis://causeway:s3cret-pass@127.0.0.1:${redis.port}`, commandTimeoutMs: 1000 }),
    { keyPrefix: 'acl:', recordTtlMs: RECORD_TTL },
    log,
  );
  t.teardown(() => viaUrl.close());
  t.equal(await viaUrl.ready(3000), true);
  await viaUrl.insert(rec('k'));
  t.equal(await redis.admin.exists('acl:session:{k}'), 1);
  const viaSettings = new RedisSessionStore(
    createRedisClient({ url: redis.url, username: 'causeway', password: 's3cret-pass', commandTimeoutMs: 1000 }),
    { keyPrefix: 'acl:', recordTtlMs: RECORD_TTL },
    log,
  );
  t.teardown(() => viaSettings.close());
  t.ok(await viaSettings.ready(3000));
  t.ok(await viaSettings.get('k'));
  const wrong = new RedisSessionStore(
    createRedisClient({ url: `redis://causeway:wrong@127.0.0.1:${redis.port}`, commandTimeoutMs: 1000 }),
    { keyPrefix: 'acl:', recordTtlMs: RECORD_TTL },
    log,
  );
  t.teardown(() => wrong.close());
  t.equal(await wrong.ready(500), false, 'a wrong password never becomes ready');
  await t.rejects(wrong.get('k'));
});

t.test('redis: fails fast when unreachable, times out when stalled', async (t) => {
  const port = await freePort();
  const dead = new RedisSessionStore(
    createRedisClient({ url: `redis://127.0.0.1:${port}`, commandTimeoutMs: 300 }),
    { keyPrefix: 'x:', recordTtlMs: 1000 },
    log,
  );
  t.teardown(() => dead.close());
  let started = Date.now();
  await t.rejects(dead.get('k'), /enableOfflineQueue|Connection|ECONNREFUSED/);
  // Rejected by the connection, not by the command timeout: nothing was queued.
  t.comment(`no Redis: rejected in ${Date.now() - started} ms`);

  const s = await redisStore('stall:', 200);
  await s.get('warm-up');
  await redis.admin.call('CLIENT', 'PAUSE', '700', 'ALL');
  started = Date.now();
  await t.rejects(s.get('k'), /timed out/i);
  const took = Date.now() - started;
  // "timed out", not an answer: the pause (700 ms) would have ended in one.
  t.comment(`a stalled Redis: command timed out after ${took} ms (commandTimeout 200)`);
  await sleep(700); // lower bound: the pause (700 ms from before the timed-out command) is over
  t.equal(await s.get('k'), undefined, 'and works again once Redis answers');
});

t.test('createStore follows the config', async (t) => {
  const base = ['--upstream.url', 'http://127.0.0.1:1/mcp'];
  const stateKey = randomBytes(32).toString('base64');
  const mem = createStore(loadConfig(base, {}), log);
  t.equal(mem.kind, 'memory', 'memory by default');
  const cfg = loadConfig(
    [...base, '--store.kind', 'redis', '--store.keyPrefix', 'cfg:', '--store.idleTtlMs', '60000'].concat([
      '--mrtr.stateKeys',
      stateKey,
    ]),
    { CAUSEWAY_STORE_REDIS_URL: redis.url },
  );
  t.equal(cfg.store.redisUrl, redis.url, 'CAUSEWAY_STORE_REDIS_URL is store.redisUrl');
  const s = createStore(cfg, log);
  t.teardown(() => s.close());
  t.equal(s.kind, 'redis');
  t.ok(await (s as RedisSessionStore).ready(5000));
  await s.insert(rec('k'));
  const ttl = await redis.admin.pttl('cfg:session:{k}');
  t.ok(ttl > 85_000 && ttl <= 90_000, `record TTL derives from store.idleTtlMs (${ttl} ms)`);

  const tls = createRedisClient({ url: 'rediss://u:p@127.0.0.1:1/2', commandTimeoutMs: 100 });
  tls.on('error', () => undefined);
  t.ok((tls.options as { tls?: unknown }).tls, 'rediss:// turns TLS on');
  t.equal((tls.options as { username?: string }).username, 'u');
  t.equal((tls.options as { db?: number }).db, 2);
  tls.disconnect();
  const sentinel = createRedisClient({
    url: 'redis://:pw@ignored:1',
    sentinels: ['127.0.0.1:1', '[::1]:2'],
    sentinelName: 'cw',
    commandTimeoutMs: 100,
  });
  sentinel.on('error', () => undefined);
  t.same((sentinel.options as { sentinels?: unknown }).sentinels, [
    { host: '127.0.0.1', port: 1 },
    { host: '::1', port: 2 },
  ]);
  t.equal((sentinel.options as { name?: string }).name, 'cw');
  t.equal((sentinel.options as { password?: string }).password, 'pw');
  sentinel.disconnect();
  const cluster = createRedisClient({ url: 'redis://127.0.0.1', cluster: ['127.0.0.1:1'], commandTimeoutMs: 100 });
  t.ok(cluster instanceof Cluster, 'store.redisCluster makes a Cluster client');
  cluster.on('error', () => undefined);
  cluster.disconnect();
  t.throws(() => createRedisClient({ url: 'http://x', commandTimeoutMs: 1 }), /redis:\/\//);
  t.throws(
    () => createRedisClient({ url: 'redis://x', cluster: ['a:1'], sentinels: ['b:2'], commandTimeoutMs: 1 }),
    /exclude/,
  );
});
