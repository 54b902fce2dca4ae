// SessionPool against a store shared by several pools (as replicas share Redis), with a stub
// upstream: single flight, one replacement per 404, no store command on the warm path, fallback to
// replica-local sessions when the store fails, and convergence when it comes back.

import t from 'tap';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/log.js';
import { CausewayError } from '../../src/errors.js';
import type { JsonObject } from '../../src/jsonrpc.js';
import {
  MemorySessionStore,
  SessionPool,
  type PoolEvents,
  type PoolOptions,
  type SessionRecord,
  type SessionStore,
} from '../../src/pool/index.js';
import { SessionExpiredError } from '../../src/upstream/core/errors.js';
import type { UpstreamClient } from '../../src/upstream/http/legacy-client.js';
import { sessionKeyFor } from '../../src/routing/index.js';
import { until } from '../helpers/until.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class StubUpstream {
  initialized = 0;
  terminated: Array<string | undefined> = [];
  /** URL new sessions open on, and URLs taken as ejected. */
  target = 'url-0';
  readonly ejected = new Set<string>();
  async initialize(_p: { protocolVersion: string; capabilities: JsonObject; clientInfo: JsonObject }) {
    const n = ++this.initialized;
    await sleep(30);
    return {
      sessionId: `s${n}`,
      target: this.target,
      protocolVersion: '2025-11-25',
      initializeResult: { capabilities: { tools: {} } } as JsonObject,
    };
  }
  async terminate(ref: { sessionId: string | undefined }) {
    this.terminated.push(ref.sessionId);
  }
  admits(target: string | undefined) {
    return target === undefined || !this.ejected.has(target);
  }
  targetIndex() {
    return 0;
  }
}

/** A store shared by pools (kind redis: shared semantics), that can be taken down and counts calls. */
class SharedStore implements SessionStore {
  readonly kind = 'redis';
  down = false;
  failOnly: string | undefined;
  calls: string[] = [];
  constructor(readonly inner = new MemorySessionStore()) {}
  private run<T>(op: string, f: () => Promise<T>): Promise<T> {
    this.calls.push(op);
    if (this.down || this.failOnly === op) return Promise.reject(new Error(`store ${op}: ECONNREFUSED`));
    return f();
  }
  get(key: string) {
    return this.run('get', () => this.inner.get(key));
  }
  claim(key: string, owner: string, ttlMs: number, dead?: number) {
    return this.run('claim', () => this.inner.claim(key, owner, ttlMs, dead));
  }
  insert(r: SessionRecord, owner?: string) {
    return this.run('insert', () => this.inner.insert(r, owner));
  }
  replace(expected: number, r: SessionRecord, owner?: string) {
    return this.run('replace', () => this.inner.replace(expected, r, owner));
  }
  remove(key: string, generation: number) {
    return this.run('remove', () => this.inner.remove(key, generation));
  }
  touch(entries: ReadonlyArray<{ key: string; lastUsedAt: number }>) {
    return this.run('touch', () => this.inner.touch(entries));
  }
  lock(key: string, owner: string, ttlMs: number) {
    return this.run('lock', () => this.inner.lock(key, owner, ttlMs));
  }
  unlock(key: string, owner: string) {
    return this.run('unlock', () => this.inner.unlock(key, owner));
  }
  idle(before: number, limit: number) {
    return this.run('idle', () => this.inner.idle(before, limit));
  }
  count() {
    return this.run('count', () => this.inner.count());
  }
  async close() {}
}

const OPTS: PoolOptions = {
  clientInfo: { name: 'test', version: '0' },
  idleTtlMs: 900_000,
  maxSessions: 1000,
  lockTtlMs: 2000,
  touchIntervalMs: 60_000,
  storeRetryMs: 100,
  retireGraceMs: 50,
};

function replica(
  store: SessionStore,
  upstream: StubUpstream,
  opts: Partial<PoolOptions> = {},
  events: PoolEvents = {},
) {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _e, cb) {
      logs.push(...chunk.toString().split('\n').filter(Boolean));
      cb();
    },
  });
  const pool = new SessionPool(
    store,
    new Map([['up', { client: upstream as unknown as UpstreamClient, protocolVersion: '2025-11-25' }]]),
    { ...OPTS, ...opts },
    createLogger('debug', sink),
    events,
  );
  t.teardown(() => pool.close());
  return { pool, logs };
}

const KEY = sessionKeyFor('up', 'principal-hash', {});

t.test('single flight across replicas: one initialize for many concurrent first requests', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const pools = [replica(store, up).pool, replica(store, up).pool, replica(store, up).pool];
  const sessions = await Promise.all(Array.from({ length: 30 }, (_, i) => pools[i % 3]!.acquire(KEY)));
  t.equal(up.initialized, 1);
  t.same(new Set(sessions.map((s) => s.record.sessionId)), new Set(['s1']));
  t.notOk(sessions.some((s) => s.localOnly));
});

t.test('the warm path sends no store command; uses are touched in one batch', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const { pool } = replica(store, up);
  const other = sessionKeyFor('up', 'someone-else', {});
  await pool.acquire(KEY);
  await pool.acquire(other);
  const cold = store.calls.length;
  for (let i = 0; i < 200; i++) await pool.acquire(i % 2 ? KEY : other);
  t.equal(store.calls.length - cold, 0, '200 warm acquires, 0 store calls');
  await pool.close();
  t.same(store.calls.slice(cold), ['touch'], 'close flushes one touch for both sessions');
});

t.test('a 404 is replaced once, not once per replica', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const pools = [replica(store, up).pool, replica(store, up).pool, replica(store, up).pool];
  const stale = await Promise.all(pools.map((p) => p.acquire(KEY)));
  const fresh = await Promise.all(stale.flatMap((s, i) => [pools[i]!.replace(s), pools[i]!.replace(s)]));
  t.equal(up.initialized, 2, 'one initialize to open, one to replace');
  t.same(new Set(fresh.map((s) => s.record.sessionId)), new Set(['s2']));
  t.equal((await store.get(KEY.id))?.generation, 2, 'the stored generation moved on');

  let calls = 0;
  const r = await pools[0]!.withSession(KEY, async (s) => {
    calls += 1;
    if (s.record.sessionId === 's2') throw new SessionExpiredError('up');
    return s.record.sessionId;
  });
  t.equal(r, 's3', 'withSession replaces on SessionExpiredError and runs again');
  t.equal(calls, 2);
  t.equal(
    (await pools[1]!.replace(fresh[2]!)).record.sessionId,
    's3',
    'another replica holding the stale one adopts the replacement',
  );
  t.equal(up.initialized, 3);
});

t.test('store down: replica-local sessions, counted and logged once; back: converge on one session', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const errors: string[] = [];
  let local = 0;
  const events: PoolEvents = { onStoreError: (op) => errors.push(op), onLocalSession: () => (local += 1) };
  const a = replica(store, up, { touchIntervalMs: 50 }, events);
  const b = replica(store, up, { touchIntervalMs: 50 }, events);
  store.down = true;
  const [sa, sb] = await Promise.all([a.pool.acquire(KEY), b.pool.acquire(KEY)]);
  t.ok(sa.localOnly && sb.localOnly, 'both replica-local');
  t.equal(up.initialized, 2, 'one initialize per replica while the store is down');
  t.equal(local, 2);
  t.ok(errors.length >= 2, `store errors counted (${errors.join(',')})`);
  // Warm requests keep working; more failures are not logged at warn again.
  for (let i = 0; i < 20; i++) t.equal((await a.pool.acquire(KEY)).record.sessionId, sa.record.sessionId);
  await sleep(200); // negative check: the background touches that fail meanwhile log no second warning
  const warns = a.logs.filter((l) => l.includes('"level":40') && l.includes('session store unavailable'));
  t.equal(warns.length, 1, 'logged once per outage');
  t.notOk(
    a.logs.some((l) => l.includes('principal-hash') && l.includes('"level":40')),
    'no key in the warning',
  );

  store.down = false;
  // Each replica's next touch finds the store back and reconciles its replica-local session.
  await until(() => [a, b].every((r) => r.logs.some((l) => l.includes('replica-local sessions reconciled'))), {
    what: 'both replicas to reconcile',
  });
  const [ra, rb] = [await a.pool.acquire(KEY), await b.pool.acquire(KEY)];
  t.equal(ra.record.sessionId, rb.record.sessionId, 'both replicas use one session again');
  t.notOk(ra.localOnly || rb.localOnly);
  t.equal((await store.get(KEY.id))?.sessionId, ra.record.sessionId, 'and it is the stored one');
  const loser = ra.record.sessionId === 's1' ? 's2' : 's1';
  await until(() => up.terminated.length > 0, { what: 'the losing session to be ended' });
  t.same(up.terminated, [loser], 'the losing replica-local session is ended upstream, once');
  t.ok(a.logs.some((l) => l.includes('session store answering again')));

  // New sessions are shared again.
  const k2 = sessionKeyFor('up', 'new-principal', {});
  const [n1, n2] = await Promise.all([a.pool.acquire(k2), b.pool.acquire(k2)]);
  t.equal(n1.record.sessionId, n2.record.sessionId);
  t.equal(up.initialized, 3);
});

t.test('a replacement made during an outage is published over the dead record it replaced', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const a = replica(store, up, { touchIntervalMs: 50 }).pool;
  const b = replica(store, up, { touchIntervalMs: 50 }).pool;
  const s1 = await a.acquire(KEY);
  const s1b = await b.acquire(KEY);
  store.down = true;
  const local = await a.replace(s1); // the upstream answered 404 while Redis was down
  t.ok(local.localOnly);
  t.equal(local.record.sessionId, 's2');
  store.down = false;
  const stored = await until(
    async () => {
      const r = await store.get(KEY.id);
      return r?.sessionId === 's2' && r;
    },
    { what: 'the replacement to be stored' },
  );
  t.equal(stored?.sessionId, 's2', 'the live replacement replaced the dead record (CAS), not the other way round');
  t.equal(stored?.generation, 2);
  t.notOk((await a.acquire(KEY)).localOnly, 'and is shared now');
  t.equal((await b.replace(s1b)).record.sessionId, 's2', 'a replica still holding the dead one adopts it on its 404');
  t.equal(up.initialized, 2);
  t.same(up.terminated, [], 'nothing live was ended');
});

t.test('a session opened but not recorded (store failed at insert) is kept replica-local, not reopened', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const { pool } = replica(store, up);
  store.failOnly = 'insert';
  const s = await pool.acquire(KEY);
  t.equal(up.initialized, 1);
  t.ok(s.localOnly);
  t.equal(await store.inner.lock(KEY.id, 'someone', 1000), true, 'the creation lock was released');
});

t.test('a reconnect signal republishes sessions a restarted store lost', async (t) => {
  let reconnect: (() => void) | undefined;
  const store = Object.assign(new SharedStore(), { onReconnect: (l: () => void) => (reconnect = l) });
  const up = new StubUpstream();
  const { pool } = replica(store, up);
  const s = await pool.acquire(KEY);
  await store.inner.remove(KEY.id, s.record.generation); // Redis restarted empty
  reconnect!();
  await until(async () => await store.get(KEY.id), { what: 'the session to be stored again' });
  t.equal((await store.get(KEY.id))?.sessionId, s.record.sessionId, 'the known session is stored again');
  t.equal(up.initialized, 1);
});

t.test('close: a shared store keeps shared sessions, ends replica-local ones; a memory store ends all', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const { pool } = replica(store, up);
  await pool.acquire(KEY);
  store.down = true;
  await pool.acquire(sessionKeyFor('up', 'other', {}));
  store.down = false;
  await pool.close();
  t.same(up.terminated, ['s2'], 'only the replica-local session is ended');
  t.ok(await store.get(KEY.id), 'the shared one stays for the other replicas');

  const memUp = new StubUpstream();
  const mem = replica(new MemorySessionStore(), memUp).pool;
  await mem.acquire(KEY);
  await mem.close();
  t.same(memUp.terminated, ['s1']);
});

t.test('idle sweep ends an idle session once, whichever replica sweeps', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const pools = [replica(store, up, { idleTtlMs: 100 }).pool, replica(store, up, { idleTtlMs: 100 }).pool];
  await Promise.all(pools.map((p) => p.acquire(KEY)));
  await until(
    async () => up.terminated.length > 0 && (await store.count()) === 0 && pools[0]!.size + pools[1]!.size === 0,
    { what: 'both replicas to sweep' },
  );
  t.same(up.terminated, ['s1'], 'DELETE sent once');
  t.equal(await store.count(), 0);
  t.equal(pools[0]!.size + pools[1]!.size, 0);
});

t.test('maxSessions bounds the shared store: the least recently used session is ended', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const a = replica(store, up, { maxSessions: 2, countEveryMs: 0 }).pool;
  const b = replica(store, up, { maxSessions: 2, countEveryMs: 0 }).pool;
  // Each session used a little later than the one before: the least recently used is plain.
  await a.acquire(sessionKeyFor('up', 'p1', {}));
  await sleep(5); // lower bound
  await b.acquire(sessionKeyFor('up', 'p2', {}));
  await sleep(5); // lower bound
  await a.acquire(sessionKeyFor('up', 'p3', {}));
  t.equal(await store.count(), 2);
  t.same(up.terminated, ['s1']);
  t.equal(await store.get(sessionKeyFor('up', 'p1', {}).id), undefined);
});

t.test(
  'maxSessions bounds a replica: the session used least recently is ended, not the one opened first',
  async (t) => {
    const up = new StubUpstream();
    const { pool } = replica(new MemorySessionStore(), up, { maxSessions: 2 });
    const [p1, p2, p3] = ['p1', 'p2', 'p3'].map((p) => sessionKeyFor('up', p, {}));
    await pool.acquire(p1!);
    await sleep(5); // lower bound: each use on a later millisecond
    await pool.acquire(p2!);
    await sleep(5); // lower bound
    const again = await pool.acquire(p1!);
    t.equal(again.record.sessionId, 's1', 'p1 warm again, so now used after p2');
    await sleep(5); // lower bound
    await pool.acquire(p3!);
    t.ok(await until(() => up.terminated.length > 0, { what: 'a session to be ended for room' }));
    t.same(up.terminated, ['s2'], 'p2, used least recently, is ended');
    t.equal(pool.warm(p1!)?.record.sessionId, 's1', 'p1 is still held');
    t.equal(pool.warm(p2!), undefined);
    t.equal(pool.size, 2);
  },
);

t.test(
  'a session whose URL is ejected moves before use, once across replicas, and is ended on its old URL later',
  async (t) => {
    const store = new SharedStore();
    const up = new StubUpstream();
    const pools = [replica(store, up).pool, replica(store, up).pool];
    const before = await Promise.all(pools.map((p) => p.acquire(KEY)));
    t.same(
      before.map((s) => s.record.target),
      ['url-0', 'url-0'],
    );
    up.ejected.add('url-0');
    up.target = 'url-1';
    const after = await Promise.all([...pools, ...pools].map((p) => p.acquire(KEY)));
    t.same(
      new Set(after.map((s) => `${s.record.sessionId}@${s.record.target}`)),
      new Set(['s2@url-1']),
      'every replica ends up on the one moved session',
    );
    t.equal(up.initialized, 2, 'moved once, not once per replica');
    t.equal((await store.get(KEY.id))?.target, 'url-1', 'the store knows where it lives now');
    t.ok(
      await until(() => up.terminated.includes('s1'), { what: 'the old session to be ended' }),
      'the old session is ended on its URL after the grace period, should that URL live',
    );
  },
);

t.test('a session lost again right after its replacement is upstream_unavailable, not a loop', async (t) => {
  const store = new SharedStore();
  const up = new StubUpstream();
  const { pool } = replica(store, up);
  let calls = 0;
  const err = await pool
    .withSession(KEY, async () => {
      calls += 1;
      throw new SessionExpiredError('up');
    })
    .catch((e: unknown) => e);
  t.type(err, CausewayError);
  t.equal((err as CausewayError).reason, 'upstream_unavailable');
  t.equal(calls, 2, 'one replacement, one retry, no more');
  t.equal(up.initialized, 2);
});

t.test(
  'sessions that end with this process (a child process here) ' +
    'are shared, and leave the store when the replica closes',
  async (t) => {
    const store = new SharedStore();
    const upstream = new StubUpstream();
    const ownHere = Object.assign(upstream, { endsHere: (target: string | undefined) => target === 'url-0' });
    const pool = new SessionPool(
      store,
      new Map([['up', { client: ownHere as unknown as UpstreamClient, protocolVersion: '2025-11-25' }]]),
      OPTS,
      createLogger('silent'),
    );
    const s = await pool.acquire(KEY);
    t.equal((await store.get(KEY.id))?.sessionId, s.record.sessionId, 'recorded in the store for the other replicas');
    await pool.close();
    t.equal(await store.inner.get(KEY.id), undefined, 'its record removed on close');
    t.same(upstream.terminated, [s.record.sessionId], 'and the session ended');
  },
);
