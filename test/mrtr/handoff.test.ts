// The handoff of a retry to the replica holding its call, over a bus: an answer comes back; a
// holder that never acknowledges is 'unreachable' (the caller replays); a holder that
// acknowledged and then went quiet costs an upstream_timeout, never a wait without end. Closing
// a replica ends its own waits as 'unreachable' and lets the rounds it serves reply first.

import t from 'tap';
import { LocalBus } from '../../src/bus/message-bus.js';
import { CausewayError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { Handoff, type RoundServer } from '../../src/mrtr/handoff.js';

const log = createLogger('silent');
const round = { callId: 'c1', round: 1, inputResponses: {} };

async function pair(t: Tap, server: RoundServer | undefined) {
  const bus = new LocalBus();
  const caller = new Handoff(bus, 'caller', 'p:', 200, log);
  const holder = new Handoff(bus, 'holder', 'p:', 200, log);
  await caller.serve(async () => 'missing');
  if (server) await holder.serve(server);
  t.teardown(async () => {
    await caller.close();
    await holder.close();
  });
  return caller;
}
type Tap = { teardown(fn: () => unknown): void };

t.test('the holder answers', async (t) => {
  const caller = await pair(t, async () => ({ kind: 'input', result: { resultType: 'input_required' } }));
  t.same(await caller.forward('holder', round, new AbortController().signal, 1_000), {
    kind: 'input',
    result: { resultType: 'input_required' },
  });
});

t.test('no holder acknowledges: unreachable, so the caller may replay', async (t) => {
  const caller = await pair(t, undefined);
  t.equal(await caller.forward('holder', round, new AbortController().signal, 1_000), 'unreachable');
});

t.test('a holder that acknowledged and went quiet: upstream_timeout, not a hang', async (t) => {
  const caller = await pair(t, () => new Promise(() => undefined));
  const err = await caller.forward('holder', round, new AbortController().signal, 300).catch((e: unknown) => e);
  t.ok(err instanceof CausewayError, 'a typed error');
  t.equal((err as CausewayError).reason, 'upstream_timeout');
});

t.test('the client going away ends the wait', async (t) => {
  const caller = await pair(t, () => new Promise(() => undefined));
  const ac = new AbortController();
  const waiting = caller.forward('holder', round, ac.signal, 60_000);
  setTimeout(() => ac.abort(new Error('client left')), 50);
  await t.rejects(waiting, /client left/);
});

t.test('closing the caller ends its waits at once: unreachable, so the round may be replayed', async (t) => {
  const bus = new LocalBus();
  const caller = new Handoff(bus, 'caller', 'p:', 60_000, log);
  const holder = new Handoff(bus, 'holder', 'p:', 60_000, log);
  await caller.serve(async () => 'missing');
  let taken!: () => void;
  const serving = new Promise<void>((r) => (taken = r));
  await holder.serve(() => {
    taken();
    return new Promise(() => undefined);
  });
  t.teardown(() => holder.close());
  const waits = [1, 2].map((n) =>
    caller.forward('holder', { ...round, round: n }, new AbortController().signal, 60_000),
  );
  await serving;
  await caller.close();
  t.same(
    await Promise.all(waits),
    ['unreachable', 'unreachable'],
    'both waits ended by the close, long before their reply timeout',
  );
});

t.test('closing the holder lets a round it is serving send its reply first', async (t) => {
  let taken!: () => void;
  const serving = new Promise<void>((r) => (taken = r));
  let answer!: () => void;
  const answered = new Promise<void>((r) => (answer = r));
  const bus = new LocalBus();
  const caller = new Handoff(bus, 'caller', 'p:', 60_000, log);
  const holder = new Handoff(bus, 'holder', 'p:', 60_000, log);
  await caller.serve(async () => 'missing');
  await holder.serve(async () => {
    taken();
    await answered;
    return { kind: 'input', result: { resultType: 'input_required' } };
  });
  t.teardown(() => caller.close());
  const reply = caller.forward('holder', round, new AbortController().signal, 60_000);
  await serving;
  const closed = holder.close();
  // A turn of the event loop: a close that did not wait for the round would be over by now, the
  // bus let go, and the reply lost.
  await new Promise((r) => setImmediate(r));
  answer();
  t.same(
    await reply,
    { kind: 'input', result: { resultType: 'input_required' } },
    'the reply went out before the bus was let go',
  );
  await closed;
});
