// ReplicaAsks between "replicas" in one process (a LocalBus between them, which, like Redis on one
// node, says how many subscribers heard a message): an ask that arrives on the replica holding a
// session's GET stream goes to the one call that can take it, on whichever replica (given here,
// or handed to another); with none or several anywhere it is refused. The count ends as soon as every replica that
// heard the query answered (the window is set far out of reach where that is what is shown); a replica that never
// answers counts as having no call once the window passes; a bus that cannot publish leaves the holder with its own
// calls.

import t, { type Test } from 'tap';
import { LocalBus, type MessageBus } from '../../src/bus/message-bus.js';
import type { JsonRpcRequest } from '../../src/jsonrpc.js';
import { createLogger } from '../../src/log.js';
import type { Exchange } from '../../src/upstream/http/inbound.js';
import { OutsideAsks } from '../../src/upstream/core/asking-calls.js';
import { ReplicaAsks } from '../../src/upstream/replicas/replica-asks.js';

const log = createLogger('silent');
const SESSION = 'session-1';
const FOREVER = 600_000;
const ask: JsonRpcRequest = { jsonrpc: '2.0', id: 7, method: 'roots/list' };

interface Replica {
  asks: ReplicaAsks;
  calls: OutsideAsks;
  /** Asks each call of this replica was given, by call name. */
  given: Map<string, JsonRpcRequest[]>;
  /** Puts a tools/call named `name` in flight on `session`. */
  call(name: string, session?: string): void;
}

async function replica(t: Test, id: string, bus: MessageBus, waitMs = FOREVER): Promise<Replica> {
  const asks = new ReplicaAsks(id, 'test:', waitMs, log);
  const calls = new OutsideAsks(log);
  asks.register('up', calls);
  await asks.start(bus);
  t.teardown(() => asks.close());
  const given = new Map<string, JsonRpcRequest[]>();
  return {
    asks,
    calls,
    given,
    call(name, session = SESSION) {
      given.set(name, []);
      const ctx = {
        session: { sessionId: session },
        handlers: { onServerRequest: (r: JsonRpcRequest) => given.get(name)!.push(r) },
        id: name,
      } as unknown as Exchange;
      const leave = calls.enter(ctx, 'tools/call');
      t.teardown(() => leave?.());
    },
  };
}

/** Routes `ask` from `holder`: where it went. */
const route = (holder: Replica): Promise<string> => holder.asks.route('up', SESSION, ask);

t.test('the one call is on a third replica: it gets the ask', async (t) => {
  const bus = new LocalBus();
  const [a, b, c] = [await replica(t, 'a', bus), await replica(t, 'b', bus), await replica(t, 'c', bus)];
  c.call('on-c');
  b.call('on-b-elsewhere', 'session-2');
  t.equal(await route(a), 'handed');
  t.same(c.given.get('on-c'), [ask], 'as an ask of that call');
  t.same(b.given.get('on-b-elsewhere'), [], 'a call on another session is not counted');
});

t.test('the one call is on the holder itself', async (t) => {
  const bus = new LocalBus();
  const a = await replica(t, 'a', bus);
  await replica(t, 'b', bus);
  a.call('on-a');
  t.equal(await route(a), 'given');
  t.same(a.given.get('on-a'), [ask]);
});

t.test('one call on each of two replicas: refused, neither is given it', async (t) => {
  const bus = new LocalBus();
  const [a, b, c] = [await replica(t, 'a', bus), await replica(t, 'b', bus), await replica(t, 'c', bus)];
  b.call('on-b');
  c.call('on-c');
  t.equal(await route(a), 'refused');
  t.same([b.given.get('on-b'), c.given.get('on-c')], [[], []]);
});

t.test('two calls on the holder, none elsewhere: refused', async (t) => {
  const bus = new LocalBus();
  const a = await replica(t, 'a', bus);
  await replica(t, 'b', bus);
  a.call('first');
  a.call('second');
  t.equal(await route(a), 'refused');
});

t.test('no call anywhere: refused once everyone answered, not after the window', async (t) => {
  const bus = new LocalBus();
  const a = await replica(t, 'a', bus);
  await replica(t, 'b', bus);
  await replica(t, 'c', bus);
  // The window is ten minutes: this resolves only because every replica that heard the query answered.
  t.equal(await route(a), 'refused');
});

t.test('a replica that hears the query but never answers counts as having no call', async (t) => {
  const bus = new LocalBus();
  const a = await replica(t, 'a', bus, 50);
  const b = await replica(t, 'b', bus, 50);
  const mute = await bus.subscribe('test:asks', () => undefined);
  t.teardown(mute);
  b.call('on-b');
  t.equal(await route(a), 'handed');
  t.same(b.given.get('on-b'), [ask]);
});

t.test('a bus that cannot tell how many heard it: the window decides', async (t) => {
  const inner = new LocalBus();
  const cluster: MessageBus = {
    publish: async (channel, message) => {
      await inner.publish(channel, message);
      return undefined;
    },
    subscribe: (channel, onMessage) => inner.subscribe(channel, onMessage),
    close: () => inner.close(),
  };
  const a = await replica(t, 'a', cluster, 50);
  const b = await replica(t, 'b', cluster, 50);
  b.call('on-b');
  t.equal(await route(a), 'handed');
  t.same(b.given.get('on-b'), [ask]);
});

t.test('a bus that cannot publish: the holder gives the ask to its own one call, or refuses', async (t) => {
  const broken: MessageBus = {
    publish: async () => {
      throw new Error('redis is away');
    },
    subscribe: async () => async () => undefined,
    close: async () => undefined,
  };
  const a = await replica(t, 'a', broken);
  t.equal(await route(a), 'refused', 'with no call of its own');
  a.call('on-a');
  t.equal(await route(a), 'given', 'with one');
  t.same(a.given.get('on-a'), [ask]);
});

t.test('the call ended between the count and the hand-over: refused', async (t) => {
  const bus = new LocalBus();
  const a = await replica(t, 'a', bus);
  const b = await replica(t, 'b', bus);
  const ctx = {
    session: { sessionId: SESSION },
    handlers: { onServerRequest: () => t.fail('an ended call was given the ask') },
    id: 'gone',
  } as unknown as Exchange;
  const leave = b.calls.enter(ctx, 'tools/call')!;
  // B counted the call; it leaves as B's count reaches A, before A hands the ask over.
  const unsubscribe = await bus.subscribe('test:asks:a', (text) => {
    const m = JSON.parse(text) as { t: string; from?: string };
    if (m.t === 'n' && m.from === 'b') leave();
  });
  t.teardown(unsubscribe);
  t.equal(await route(a), 'refused');
});
