// Listen coordination across replicas on a private Redis: the GET-stream lease (exclusive,
// renewed, released by compare-and-delete, taken over after expiry), subscription counts summed
// over live channels (a dead channel's discounted), a Redis that is away; then two listen
// channels standing for two replicas (scripted upstream client, in-process pub/sub): one GET
// stream between them, one upstream subscription per URI, hand-over when the holder leaves or dies.

import t from 'tap';
import { SessionFacts } from '../../src/pool/session-facts.js';
import { LocalBus } from '../../src/bus/message-bus.js';
import type { JsonObject, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../../src/jsonrpc.js';
import { createLogger } from '../../src/log.js';
import type { Cluster, Redis } from 'ioredis';
import { createRedisClient, sessionKey, type PooledSession, type SessionPool } from '../../src/pool/index.js';
import { SessionChannel, type ChannelMember } from '../../src/subscriptions/channel.js';
import { RedisListenCoordinator } from '../../src/subscriptions/redis-coordination.js';
import { listenKeys } from '../../src/subscriptions/redis-keys.js';
import { SharedSessionEventBus, Subscriptions } from '../../src/subscriptions/index.js';
import { IdMinter } from '../../src/upstream/ids.js';
import type { SessionRef, StreamHandlers, UpstreamClient } from '../../src/upstream/legacy-client.js';
import { freePort, startRedis } from '../helpers/redis.js';

const log = createLogger('silent');
const TTL = 300;
const redis = await startRedis();
const clients: Array<Redis | Cluster> = [];
/** A coordinator on a client of its own, connected (unless `url` leads nowhere). */
async function coordinator(prefix: string, url = redis.url): Promise<RedisListenCoordinator> {
  const c = createRedisClient({ url, commandTimeoutMs: 500 });
  c.on('error', () => undefined);
  clients.push(c);
  if (url === redis.url) await new Promise((r) => c.once('ready', r));
  return new RedisListenCoordinator(c, { keyPrefix: prefix, leaseTtlMs: TTL }, log);
}
t.teardown(async () => {
  for (const c of clients) c.disconnect();
  await redis.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long a wait for something that must happen may take: only a failing test waits it out. */
const WAIT_MS = 30_000;
const until = async (cond: () => boolean, ms = WAIT_MS) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(5);
  }
};
const sorted = (x: { subscribe: string[]; unsubscribe: string[] }) => ({ subscribe: [...x.subscribe].sort(), unsubscribe: [...x.unsubscribe].sort() });
const counts = (o: Record<string, number>) => new Map(Object.entries(o));

t.test('the GET-stream lease: one holder, renewed, released only by its holder', async (t) => {
  const [r1, r2] = await Promise.all([coordinator('l1:'), coordinator('l1:')]);
  const a = r1.join('key{1}');
  const b = r2.join('key{1}');
  t.equal(await a.hold(), 'acquired');
  t.equal(await b.hold(), 'taken');
  t.equal(await a.hold(), 'renewed');
  await b.release();
  t.equal(await b.hold(), 'taken', 'a release by another channel does nothing');
  await b.sync(new Map());
  await a.release();
  t.equal(await b.hold(), 'acquired', 'free once released');
  t.equal(await a.hold(), 'taken');
  await a.sync(new Map());
  await b.release();
  t.equal(await a.hold(), 'acquired-others', 'taken while another channel listens: it may have missed changes');
  const k = listenKeys('l1:', 'key{1}');
  t.equal(k.holder, 'l1:listen-holder:{key%7B1%7D}', 'the session key id is one escaped hash tag');
  const pttl = await redis.admin.pttl(k.holder);
  t.ok(pttl > 0 && pttl <= TTL, `the lease has a TTL (${pttl})`);
});

t.test('a lease not renewed expires and another channel takes it', async (t) => {
  const a = (await coordinator('l2:')).join('k');
  const b = (await coordinator('l2:')).join('k');
  // Read before the lease is set: it cannot expire sooner than TTL after this on any machine.
  const started = Date.now();
  t.equal(await a.hold(), 'acquired');
  while ((await b.hold()) === 'taken') await sleep(20);
  t.ok(Date.now() - started >= TTL - 5, 'not before the TTL');
  t.equal(await a.hold(), 'taken', 'the old holder learns it lost it');
});

t.test('subscription counts are summed over channels; 0 <-> n transitions reported once', async (t) => {
  const a = (await coordinator('c1:')).join('k');
  const b = (await coordinator('c1:')).join('k');
  t.same(sorted(await a.sync(counts({ u: 1, v: 2 }))), { subscribe: ['u', 'v'], unsubscribe: [] });
  t.same(sorted(await b.sync(counts({ u: 3 }))), { subscribe: [], unsubscribe: [] }, 'u already held elsewhere');
  t.same((await b.uris()).sort(), ['u', 'v']);
  t.same(await b.held(['u', 'w']), ['u']);
  t.same(sorted(await a.sync(counts({ v: 1 }))), { subscribe: [], unsubscribe: [] }, 'u still held by b');
  t.same(sorted(await b.sync(counts({}))), { subscribe: [], unsubscribe: ['u'] }, 'the last holder of u anywhere');
  t.same(sorted(await a.leave()), { subscribe: [], unsubscribe: ['v'] });
  t.same(await a.uris(), []);
  t.same(await redis.admin.keys('c1:listen-uris:*'), [], 'nothing left counted');
});

t.test('a channel that stops renewing is discounted: its URIs go to 0', async (t) => {
  const dead = (await coordinator('c2:')).join('k');
  const live = (await coordinator('c2:')).join('k');
  await dead.sync(counts({ shared: 1, orphan: 1 }));
  await live.sync(counts({ shared: 1 }));
  const end = Date.now() + TTL + 100;
  let seen = { subscribe: [] as string[], unsubscribe: [] as string[] };
  while (Date.now() < end) {
    const r = await live.sync(counts({ shared: 1 }));
    if (r.unsubscribe.length > 0) seen = r;
    await sleep(50);
  }
  t.same(seen, { subscribe: [], unsubscribe: ['orphan'] }, 'the dead channel’s URI is released by a live one, once');
  t.same(await live.uris(), ['shared']);
});

t.test('the GET-stream cursor: written only by the lease holder, kept with the lease, newest last', async (t) => {
  const [r1, r2] = await Promise.all([coordinator('m1:'), coordinator('m1:')]);
  const a = r1.join('k');
  const b = r2.join('k');
  const k = listenKeys('m1:', 'k');
  t.equal(k.cursor, 'm1:listen-cursor:{k}', 'next to the lease, same hash tag');
  t.equal(await a.hold(), 'acquired');
  t.equal(await b.hold(), 'taken');
  for (let i = 1; i <= 50; i++) a.mark(`s e-${i}`);
  let got: string | undefined;
  for (let i = 0; i < 100 && (got = await b.cursor()) !== 's e-50'; i++) await sleep(5);
  t.equal(got, 's e-50', 'coalesced writes end on the newest');
  b.mark('s e-999');
  await sleep(50);
  t.equal(await a.cursor(), 's e-50', 'a channel without the lease writes nothing');
  const pttl = await redis.admin.pttl(k.cursor);
  t.ok(pttl > TTL, `the cursor outlives the lease (${pttl} ms)`);
  a.mark(undefined);
  await sleep(50);
  t.equal(await b.cursor(), undefined, 'forgotten');
});

t.test('a Redis that is away: nothing known, each channel acts on its own counts', async (t) => {
  const port = await freePort();
  const away = (await coordinator('x:', `redis://127.0.0.1:${port}`)).join('k');
  t.equal(await away.hold(), 'unknown');
  t.same(await away.sync(counts({ u: 1 })), { subscribe: ['u'], unsubscribe: [] });
  t.same(await away.sync(counts({ u: 2 })), { subscribe: [], unsubscribe: [] });
  t.same(await away.sync(counts({})), { subscribe: [], unsubscribe: [] }, 'never unsubscribes what another replica may hold');
  t.same(await away.uris(), []);
  t.equal(await away.cursor(), undefined);
  away.mark('s e-1');
  await away.release();
});

// ---- two channels standing for two replicas ----

const KEY = sessionKey('up', 'anonymous', {});

interface FakeStream {
  handlers: StreamHandlers;
  signal: AbortSignal;
  /** The Last-Event-ID it was opened with. */
  from: string | undefined;
}

class FakeClient {
  readonly streams: FakeStream[] = [];
  readonly calls: Array<{ method: string; uri: unknown }> = [];
  /** Resumes refused so far (when refusing). */
  refused = 0;
  constructor(private readonly refuseResume = false) {}
  async openStream(_ref: SessionRef, handlers: StreamHandlers, signal: AbortSignal, from?: string): Promise<{ done: Promise<void> }> {
    if (from !== undefined && this.refuseResume) {
      this.refused += 1;
      throw new Error('HTTP 400: unknown event id');
    }
    this.streams.push({ handlers, signal, from });
    return { done: new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })) };
  }
  async request(_ref: SessionRef, msg: JsonRpcRequest): Promise<JsonRpcResponse> {
    this.calls.push({ method: msg.method, uri: msg.params?.uri });
    return { jsonrpc: '2.0', id: msg.id, result: {} };
  }
  get open(): FakeStream[] {
    return this.streams.filter((s) => !s.signal.aborted);
  }
  count(method: string): number {
    return this.calls.filter((c) => c.method === method).length;
  }
}

const session: PooledSession = {
  key: KEY,
  record: {
    key: KEY.id,
    sessionId: 's1',
    protocolVersion: '2025-11-25',
    initializeResult: { capabilities: { tools: { listChanged: true }, resources: { subscribe: true } } } as JsonObject,
    createdAt: 1,
    lastUsedAt: 0,
    generation: 1,
  },
  facts: new SessionFacts(),
  lastUsedAt: 0,
  localOnly: false,
};
const pool = { acquire: async () => session, replace: async () => session } as unknown as SessionPool;

function member(): ChannelMember & { got: string[] } {
  const got: string[] = [];
  return { got, deliver: (x) => void got.push(x.method), lost: () => undefined };
}

async function twoReplicas(prefix: string, client = new FakeClient()) {
  const wire = new LocalBus();
  const replica = async (id: string) => {
    const bus = new SharedSessionEventBus(wire, { keyPrefix: prefix, replicaId: id, subscribeTimeoutMs: 500 }, log);
    const deps = { pool, client: client as unknown as UpstreamClient, ids: new IdMinter(), bus, log, coordinator: await coordinator(prefix) };
    return { deps, channel: () => new SessionChannel(KEY, session, deps, () => undefined) };
  };
  return { client, a: await replica('A'), b: await replica('B') };
}

const change = (method: string): JsonRpcNotification => ({ jsonrpc: '2.0', method });

t.test('two replicas: one GET stream, one subscription per URI, changes everywhere, hand-over on leave', async (t) => {
  const { client, a, b } = await twoReplicas('h1:');
  const [chA, chB] = [a.channel(), b.channel()];
  const [mA, mB] = [member(), member()];
  t.same(await chA.attach(mA, ['test://w']), ['test://w']);
  t.same(await chB.attach(mB, ['test://w']), ['test://w']);
  t.equal(client.streams.length, 1, 'one GET stream');
  t.ok(chA.holdsStream);
  t.notOk(chB.holdsStream, 'B only hears the bus');
  t.equal(client.count('resources/subscribe'), 1, 'one subscribe for both replicas');

  client.streams[0]!.handlers.onNotification!(change('notifications/tools/list_changed'));
  await until(() => mB.got.length === 1);
  t.same([mA.got, mB.got], [['notifications/tools/list_changed'], ['notifications/tools/list_changed']], 'a change on A’s stream reaches B');
  new Subscriptions({ ...b.deps, clientOf: () => b.deps.client }, { maxListeners: 1, maxPerPrincipal: 1, keepAliveMs: 0, maxUrisPerListen: 1 }).publishChange(
    session,
    change('notifications/prompts/list_changed'),
  );
  await until(() => mA.got.length === 2);
  t.same(mA.got[1], 'notifications/prompts/list_changed', 'one seen on a call stream on B reaches A');

  await chA.detach(mA);
  t.equal(client.count('resources/unsubscribe'), 0, 'B still holds the URI');
  await until(() => client.open.length === 1 && chB.holdsStream);
  t.equal(client.streams.length, 2, 'B took the stream at once when A let it go');
  await until(() => mB.got.length >= 6);
  t.same(
    mB.got.slice(2),
    ['notifications/tools/list_changed', 'notifications/prompts/list_changed', 'notifications/resources/list_changed', 'notifications/resources/updated'],
    'and told its members everything may have changed meanwhile',
  );
  await chB.detach(mB);
  t.equal(client.count('resources/unsubscribe'), 1, 'unsubscribed once the last listener anywhere left');
  t.equal(client.open.length, 0);
});

t.test('two replicas: a holder that dies is replaced after its lease, its counts discounted', async (t) => {
  const { client, a, b } = await twoReplicas('h2:');
  const [chA, chB] = [a.channel(), b.channel()];
  const [mA, mB] = [member(), member()];
  // Read before A takes the lease: it cannot run out sooner than TTL after this on any machine.
  const started = Date.now();
  await chA.attach(mA, ['test://w', 'test://only-a']);
  await chB.attach(mB, ['test://w']);
  t.equal(client.count('resources/subscribe'), 2);
  // A "dies": it never ticks again (its stream stays open in this fake, as a hung replica's would).
  while (!chB.holdsStream && Date.now() - started < WAIT_MS) {
    chB.touch();
    await sleep(50);
  }
  t.ok(chB.holdsStream, `B took the stream over (${Date.now() - started} ms)`);
  t.ok(Date.now() - started >= TTL - 5, 'after the lease ran out');
  t.equal(client.streams.length, 2);
  await until(() => client.count('resources/unsubscribe') === 1);
  t.same(client.calls.at(-1), { method: 'resources/unsubscribe', uri: 'test://only-a' }, 'what only the dead replica held is released');
  chB.touch();
  await chB.detach(mB);
  t.same(client.calls.at(-1), { method: 'resources/unsubscribe', uri: 'test://w' });
  t.equal(client.count('resources/unsubscribe'), 2);
});

/** Drives the lease heartbeat of `channel` (what Subscriptions' heartbeat timer does) until `cond`. */
async function beatUntil(channel: SessionChannel, cond: () => boolean, ms = WAIT_MS): Promise<number> {
  const started = Date.now();
  while (!cond() && Date.now() - started < ms) {
    channel.heartbeat();
    await sleep(20);
  }
  return Date.now() - started;
}

t.test('two replicas: a dead holder’s successor resumes from the shared event id, without over-notifying', async (t) => {
  const { client, a, b } = await twoReplicas('h3:');
  const [chA, chB] = [a.channel(), b.channel()];
  const [mA, mB] = [member(), member()];
  await chA.attach(mA, ['test://w']);
  await chB.attach(mB, ['test://w']);
  t.equal(client.streams[0]!.from, undefined, 'the first holder opens a fresh stream');
  const stream = client.streams[0]!;
  stream.handlers.onNotification!(change('notifications/tools/list_changed'));
  stream.handlers.afterEvent!('ev-7');
  await until(() => mB.got.length === 1);
  const k = listenKeys('h3:', KEY.id);
  for (let i = 0; i < 100 && !(await redis.admin.get(k.cursor))?.endsWith(' ev-7'); i++) await sleep(5);
  t.match(await redis.admin.get(k.cursor), /^[0-9a-f]{16} ev-7$/, 'A shared the id once the change was published');
  // A "dies": no heartbeat from it any more; B's heartbeat takes over once the lease is gone.
  // B holds the lease a moment before its stream is opened: wait for both.
  const took = await beatUntil(chB, () => chB.holdsStream && client.streams.length === 2);
  t.ok(chB.holdsStream, `B took the stream over on its heartbeat (${took} ms), no tick needed`);
  t.equal(client.streams.length, 2);
  t.equal(client.streams[1]!.from, 'ev-7', 'with the Last-Event-ID A shared');
  await sleep(100);
  t.same(mB.got, ['notifications/tools/list_changed'], 'no "everything may have changed": the upstream replays the gap');
  await chB.detach(mB);
});

t.test('two replicas: a resume the upstream refuses falls back to a fresh stream and over-notifies', async (t) => {
  const client = new FakeClient(true);
  const { a, b } = await twoReplicas('h4:', client);
  const [chA, chB] = [a.channel(), b.channel()];
  const [mA, mB] = [member(), member()];
  await chA.attach(mA, []);
  await chB.attach(mB, []);
  client.streams[0]!.handlers.afterEvent!('ev-1');
  const k = listenKeys('h4:', KEY.id);
  for (let i = 0; i < 100 && !(await redis.admin.get(k.cursor)); i++) await sleep(5);
  await beatUntil(chB, () => chB.holdsStream && client.streams.length === 2);
  t.ok(client.refused > 0, `the resume was tried (${client.refused} times)`);
  t.equal(client.streams[1]!.from, undefined, 'then a fresh stream');
  await until(() => mB.got.length >= 3);
  t.same(mB.got.slice(0, 3), ['notifications/tools/list_changed', 'notifications/prompts/list_changed', 'notifications/resources/list_changed'], 'and the gap is over-notified');
  await chB.detach(mB);
});

t.test('the holder renews its lease on the heartbeat, so it outlives its TTL', async (t) => {
  const { client, a, b } = await twoReplicas('h5:');
  const [chA, chB] = [a.channel(), b.channel()];
  const [mA, mB] = [member(), member()];
  await chA.attach(mA, []);
  await chB.attach(mB, []);
  const end = Date.now() + 3 * TTL;
  while (Date.now() < end) {
    chA.heartbeat();
    chB.heartbeat();
    await sleep(TTL / 4);
  }
  t.ok(chA.holdsStream, 'A still holds it');
  t.notOk(chB.holdsStream);
  t.equal(client.streams.length, 1, 'no take-over while the holder beats');
  await chA.detach(mA);
  await chB.detach(mB);
});
