// The cross-replica session event bus over an in-process MessageBus standing for Redis pub/sub:
// an event reaches the key's subscribers on every replica exactly once, only while subscribed,
// and memo-staling changes reach every replica, listeners or not.

import t from 'tap';
import { LocalBus } from '../../src/bus/message-bus.js';
import type { JsonRpcNotification } from '../../src/jsonrpc.js';
import { createLogger } from '../../src/log.js';
import { SharedSessionEventBus } from '../../src/subscriptions/index.js';
import { until } from '../helpers/until.js';

const log = createLogger('silent');
const n = (method: string): JsonRpcNotification => ({ jsonrpc: '2.0', method });
// LocalBus delivers by microtask: every delivery due has run once a timer fires.
const tick = () => new Promise((r) => setTimeout(r, 20));

function replicas() {
  const wire = new LocalBus();
  const stale: Array<[string, string, string]> = [];
  const make = (id: string) =>
    new SharedSessionEventBus(
      wire,
      {
        keyPrefix: 'p:',
        replicaId: id,
        subscribeTimeoutMs: 500,
        onStale: (k, m) => void stale.push([id, k ?? '*', m]),
      },
      log,
    );
  return { wire, a: make('A'), b: make('B'), c: make('C'), stale };
}

t.test('an event reaches every replica subscribed to its key, once each', async (t) => {
  const { a, b, c } = replicas();
  const got: string[] = [];
  const offA = await a.subscribe('k1', (x) => void got.push(`A:${x.method}`));
  const offB = await b.subscribe('k1', (x) => void got.push(`B:${x.method}`));
  await c.subscribe('k2', (x) => void got.push(`C:${x.method}`));
  const sent = a.publish('k1', n('notifications/prompts/list_changed'));
  t.same(got, ['A:notifications/prompts/list_changed'], 'the publishing replica hears it at once');
  await sent;
  await until(() => got.length >= 2, { what: 'the event on B' });
  t.same(
    got,
    ['A:notifications/prompts/list_changed', 'B:notifications/prompts/list_changed'],
    'the other once; not echoed back to A; not on another key',
  );

  await offB();
  await b.publish('k1', n('notifications/tools/list_changed'));
  await until(() => got.length >= 3, { what: 'the event on A' });
  t.same(
    got.slice(2),
    ['A:notifications/tools/list_changed'],
    'a replica that left publishes still, and hears nothing',
  );
  t.equal(b.keys, 0);
  await offA();
  await offA();
  t.equal(a.keys, 0, 'leaving is idempotent');
});

t.test('a change that stales session facts reaches every other replica, listeners or not', async (t) => {
  const { a, b, c, stale } = replicas();
  await Promise.all([a.start(), b.start(), c.start()]);
  await a.publish('k1', n('notifications/prompts/list_changed'));
  await a.publish('k1', n('notifications/tools/list_changed'));
  await until(() => stale.length >= 2, { what: 'the change on B and C' });
  t.same(
    stale.sort(),
    [
      ['B', 'k1', 'notifications/tools/list_changed'],
      ['C', 'k1', 'notifications/tools/list_changed'],
    ],
    'tools/list_changed makes the tool annotations stale everywhere else',
  );
  await Promise.all([a.close(), b.close(), c.close()]);
  await b.publish('k1', n('notifications/tools/list_changed'));
  await tick(); // negative check
  t.equal(stale.length, 2, 'closed buses hear nothing');
});

t.test('a subscription that never completes does not hold the listener up', async (t) => {
  const never = {
    publish: async () => undefined,
    subscribe: () => new Promise<never>(() => undefined),
    close: async () => undefined,
  };
  const bus = new SharedSessionEventBus(never, { keyPrefix: 'p:', replicaId: 'A', subscribeTimeoutMs: 50 }, log);
  const got: string[] = [];
  const started = Date.now();
  // The subscription never settles: only subscribeTimeoutMs can end this wait (else the test times out).
  const off = await bus.subscribe('k', (x) => void got.push(x.method));
  t.comment(`subscribe returned after ${Date.now() - started} ms (subscribeTimeoutMs 50)`);
  await bus.publish('k', n('notifications/tools/list_changed'));
  t.same(got, ['notifications/tools/list_changed'], 'local listeners still hear local events');
  await off();
});
