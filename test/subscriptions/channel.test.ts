// A listen channel against a scripted upstream client and pool: one GET stream per session while
// listened to, resources/subscribe reference-counted, memos made stale by changes, the stream and
// subscriptions re-made on a replacement session, and members told when the upstream is gone.

import t from 'tap';
import { SessionFacts } from '../../src/pool/session-facts.js';
import type { JsonObject, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../../src/jsonrpc.js';
import { createLogger } from '../../src/log.js';
import type { PooledSession, SessionPool } from '../../src/pool/index.js';
import { InProcessSessionEventBus, Subscriptions } from '../../src/subscriptions/index.js';
import { SessionChannel, type ChannelMember } from '../../src/subscriptions/channel.js';
import { SessionExpiredError } from '../../src/upstream/core/errors.js';
import { IdMinter } from '../../src/upstream/core/ids.js';
import type { SessionRef, StreamHandlers, UpstreamClient } from '../../src/upstream/http/legacy-client.js';
import { sessionKeyFor } from '../../src/routing/index.js';
import { toolFacts } from '../../src/dialect/index.js';
import { until } from '../helpers/until.js';

/** A tools/list page whose one tool has an x-mcp-header annotation. */
const ANNOTATED_TOOLS = {
  tools: [
    {
      name: 'search',
      inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } },
    },
  ],
};

const log = createLogger('silent');
const KEY = sessionKeyFor('up', 'anonymous', {});

interface FakeStream {
  ref: SessionRef;
  handlers: StreamHandlers;
  signal: AbortSignal;
  fail(err: unknown): void;
}

class FakeClient {
  readonly streams: FakeStream[] = [];
  readonly calls: Array<{ method: string; uri: unknown; sessionId: string | undefined }> = [];
  /** Scripted outcomes of the next openStream calls; default: accepted. */
  opens: Array<Error | 'unsupported'> = [];
  /** Scripted outcomes of the next requests; default: an empty result. */
  answers: Array<Error | 'refuse'> = [];

  async openStream(
    ref: SessionRef,
    handlers: StreamHandlers,
    signal: AbortSignal,
  ): Promise<'unsupported' | { done: Promise<void> }> {
    const next = this.opens.shift();
    if (next instanceof Error) throw next;
    if (next === 'unsupported') return 'unsupported';
    let fail!: (err: unknown) => void;
    const done = new Promise<void>((resolve, reject) => {
      fail = reject;
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
    this.streams.push({ ref, handlers, signal, fail });
    return { done };
  }

  async request(ref: SessionRef, msg: JsonRpcRequest): Promise<JsonRpcResponse> {
    this.calls.push({ method: msg.method, uri: msg.params?.uri, sessionId: ref.sessionId });
    const next = this.answers.shift();
    if (next instanceof Error) throw next;
    if (next === 'refuse') return { jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'no such resource' } };
    return { jsonrpc: '2.0', id: msg.id, result: {} };
  }

  get open(): FakeStream[] {
    return this.streams.filter((s) => !s.signal.aborted);
  }

  count(method: string): number {
    return this.calls.filter((c) => c.method === method).length;
  }
}

let generation = 0;
function pooled(sessionId: string): PooledSession {
  generation += 1;
  return {
    key: KEY,
    record: {
      key: KEY.id,
      sessionId,
      protocolVersion: '2025-11-25',
      initializeResult: {
        capabilities: { tools: { listChanged: true }, resources: { subscribe: true } },
      } as JsonObject,
      createdAt: generation,
      lastUsedAt: 0,
      generation,
    },
    facts: new SessionFacts(),
    lastUsedAt: 0,
    localOnly: false,
  };
}

class FakePool {
  replaced = 0;
  constructor(public current: PooledSession) {}
  async acquire(): Promise<PooledSession> {
    return this.current;
  }
  peek(): PooledSession | undefined {
    return this.current;
  }
  async replace(): Promise<PooledSession> {
    this.replaced += 1;
    this.current = pooled(`s${this.replaced + 1}`);
    return this.current;
  }
}

function setup(first = pooled('s1')) {
  const client = new FakeClient();
  const pool = new FakePool(first);
  const bus = new InProcessSessionEventBus();
  let ended = 0;
  const deps = {
    pool: pool as unknown as SessionPool,
    client: client as unknown as UpstreamClient,
    ids: new IdMinter(),
    bus,
    log,
  };
  const channel = new SessionChannel(KEY, first, deps, () => (ended += 1));
  return { client, pool, bus, channel, deps, first, ended: () => ended };
}

function member(): ChannelMember & { got: JsonRpcNotification[]; lostErrors: unknown[] } {
  const got: JsonRpcNotification[] = [];
  const lostErrors: unknown[] = [];
  return { got, lostErrors, deliver: (x) => void got.push(x), lost: (err) => void lostErrors.push(err) };
}

const n = (method: string, params?: JsonObject): JsonRpcNotification => ({
  jsonrpc: '2.0',
  method,
  ...(params ? { params } : {}),
});

t.test('one GET stream and one upstream subscription per URI, however many members', async (t) => {
  const { client, bus, channel, first, ended } = setup();
  const a = member();
  const b = member();
  t.same(await channel.attach(a, ['test://w', 'test://x']), ['test://w', 'test://x']);
  t.same(await channel.attach(b, ['test://w']), ['test://w']);
  t.equal(client.streams.length, 1, 'one GET stream');
  t.equal(client.count('resources/subscribe'), 2, 'one subscribe per URI');
  t.same(Object.fromEntries(channel.subscriptions), { 'test://w': 2, 'test://x': 1 });
  t.equal(bus.keys, 1);

  first.facts.learnTools(toolFacts(ANNOTATED_TOOLS));
  first.facts.toolsComplete = true;
  first.facts.loggingEnabled = true;
  client.streams[0]!.handlers.onNotification!(n('notifications/tools/list_changed'));
  client.streams[0]!.handlers.onNotification!(n('notifications/message', { level: 'info', data: 'x' }));
  t.same(
    a.got.map((x) => x.method),
    ['notifications/tools/list_changed'],
    'changes only',
  );
  t.same(
    b.got.map((x) => x.method),
    ['notifications/tools/list_changed'],
  );
  t.equal(first.facts.toolHeaders('search'), undefined, 'the tool annotations are forgotten');
  t.notOk(first.facts.toolsComplete, 'and must be listed again');
  t.ok(first.facts.loggingEnabled, 'what the change does not touch is kept');

  await channel.detach(a);
  t.same(
    client.calls.filter((c) => c.method === 'resources/unsubscribe').map((c) => c.uri),
    ['test://x'],
    'x had one holder',
  );
  t.equal(client.open.length, 1, 'stream kept for b');
  await channel.detach(b);
  t.same(
    client.calls.filter((c) => c.method === 'resources/unsubscribe').map((c) => c.uri),
    ['test://x', 'test://w'],
  );
  t.equal(client.open.length, 0, 'stream closed after the last member');
  t.equal(bus.keys, 0, 'left the bus');
  t.equal(ended(), 1);
  await channel.detach(b);
  t.equal(client.count('resources/unsubscribe'), 2, 'detach is idempotent');
});

t.test('a refused subscription is left out of what the member holds', async (t) => {
  const { client, channel } = setup();
  client.answers = ['refuse'];
  const a = member();
  t.same(await channel.attach(a, ['test://missing']), []);
  t.same(Object.fromEntries(channel.subscriptions), {});
  await channel.detach(a);
  t.equal(client.count('resources/unsubscribe'), 0, 'nothing to undo');
});

t.test('changes seen on call streams reach the listeners and stale the session facts', async (t) => {
  const { channel, first, deps } = setup();
  const subs = new Subscriptions(
    { ...deps, clientOf: () => deps.client },
    { maxListeners: 10, maxPerPrincipal: 10, keepAliveMs: 0, maxUrisPerListen: 10 },
  );
  const a = member();
  await channel.attach(a, []);
  first.facts.learnTools(toolFacts(ANNOTATED_TOOLS));
  t.ok(first.facts.toolHeaders('search'), 'the annotations were learned');
  subs.publishChange(first, n('notifications/tools/list_changed'));
  subs.publishChange(first, n('notifications/progress', { progressToken: 1, progress: 1 }));
  t.same(
    a.got.map((x) => x.method),
    ['notifications/tools/list_changed'],
  );
  t.equal(first.facts.toolHeaders('search'), undefined);
  await channel.detach(a);
});

t.test(
  'the upstream forgets the session: stream and subscriptions re-made on the replacement, gap announced',
  async (t) => {
    const { client, pool, channel } = setup();
    const a = member();
    await channel.attach(a, ['test://w']);
    client.streams[0]!.fail(new SessionExpiredError('up'));
    await until(() => client.open.length === 1 && client.open[0]!.ref.sessionId === 's2' && a.got.length >= 4, {
      what: 'the stream on the new session',
    });
    t.equal(pool.replaced, 1);
    t.same(
      client.calls.filter((c) => c.method === 'resources/subscribe').map((c) => c.sessionId),
      ['s1', 's2'],
      'subscription renewed on the new session',
    );
    t.same(
      a.got.map((x) => x.method),
      [
        'notifications/tools/list_changed',
        'notifications/prompts/list_changed',
        'notifications/resources/list_changed',
        'notifications/resources/updated',
      ],
      'everything may have changed during the gap',
    );
    await channel.detach(a);
    t.same(client.calls.at(-1), { method: 'resources/unsubscribe', uri: 'test://w', sessionId: 's2' });
  },
);

t.test('the first GET finds the session gone: a replacement is opened before the member joins', async (t) => {
  const { client, pool, channel } = setup();
  client.opens = [new SessionExpiredError('up')];
  const a = member();
  await channel.attach(a, ['test://w']);
  t.equal(pool.replaced, 1);
  t.equal(client.open[0]!.ref.sessionId, 's2');
  t.same(
    client.calls.map((c) => c.sessionId),
    ['s2'],
  );
  await channel.detach(a);
});

t.test('a stream only stood by for, whose session the upstream forgot, opens no new session', async (t) => {
  const { client, pool, channel } = setup();
  const standing = { ...member(), standing: true };
  await channel.attach(standing, []);
  t.equal(client.open.length, 1, 'the stream is held');
  client.opens = [new SessionExpiredError('up')];
  client.streams[0]!.fail(new SessionExpiredError('up'));
  await until(() => standing.lostErrors.length === 1, { what: 'the standing member to hear the loss' });
  t.equal(pool.replaced, 0, 'no replacement opened: nobody listens');
  t.equal(client.open.length, 0);
  // Once a request has opened another session, the channel follows it rather than breaking.
  const second = setup();
  const other = { ...member(), standing: true };
  await second.channel.attach(other, []);
  second.pool.current = pooled('s9');
  second.client.streams[0]!.fail(new SessionExpiredError('up'));
  await until(() => second.client.open.some((s) => s.ref.sessionId === 's9'), { what: 'the stream on the new one' });
  t.equal(second.pool.replaced, 0, 'followed, not opened');
  t.same(other.lostErrors, []);
  await second.channel.detach(other);
});

t.test('a stream that cannot be re-opened ends the members (they re-listen); nothing more goes upstream', async (t) => {
  const { client, channel } = setup();
  const a = member();
  await channel.attach(a, ['test://w']);
  const boom = new Error('connection refused');
  client.opens = [boom, boom, boom, boom];
  client.streams[0]!.fail(boom);
  await until(() => a.lostErrors.length === 1, { what: 'the member to hear the loss' });
  t.match(a.lostErrors[0], { reason: 'upstream_unavailable' }, 'told why');
  await channel.detach(a);
  t.equal(client.count('resources/unsubscribe'), 0, 'a lost session took its subscriptions with it');
  await t.rejects(
    channel.attach(member(), []),
    { reason: 'upstream_unavailable' } as never,
    'a broken channel takes no one',
  );
});

t.test('a first GET that keeps failing fails the attach and ends the channel', async (t) => {
  const { client, bus, channel, ended } = setup();
  const boom = new Error('refused');
  client.opens = [boom, boom, boom, boom];
  await t.rejects(channel.attach(member(), ['test://w']), boom);
  t.equal(client.count('resources/subscribe'), 0);
  t.equal(bus.keys, 0);
  t.equal(ended(), 1);
});

t.test('an upstream without a GET stream still gets members and subscriptions', async (t) => {
  const { client, channel, deps, first } = setup();
  client.opens = ['unsupported'];
  const a = member();
  t.same(await channel.attach(a, ['test://w']), ['test://w']);
  new Subscriptions(
    { ...deps, clientOf: () => deps.client },
    { maxListeners: 1, maxPerPrincipal: 1, keepAliveMs: 0, maxUrisPerListen: 1 },
  ).publishChange(first, n('notifications/resources/updated', { uri: 'test://w' }));
  t.same(
    a.got.map((x) => x.method),
    ['notifications/resources/updated'],
  );
  await channel.detach(a);
});

t.test('touch follows the pool to a new session for the key', async (t) => {
  const { client, pool, channel } = setup();
  const a = member();
  await channel.attach(a, ['test://w']);
  pool.current = pooled('s9');
  channel.touch();
  await until(() => client.open.length === 1 && client.open[0]!.ref.sessionId === 's9', {
    what: 'the stream on the new session',
  });
  t.same(
    client.calls.map((c) => `${c.method}@${c.sessionId}`),
    ['resources/subscribe@s1', 'resources/subscribe@s9'],
  );
  await until(() => a.got.length === 4, { what: 'the member to be told' });
  await channel.detach(a);
});
