// The handoff of a retry to the replica holding its call, over a bus: an answer comes back; a
// holder that never acknowledges is 'unreachable' (the caller replays); a holder that
// acknowledged and then went quiet costs an upstream_timeout, never a wait without end.

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
  t.same(await caller.forward('holder', round, new AbortController().signal, 1_000), { kind: 'input', result: { resultType: 'input_required' } });
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
