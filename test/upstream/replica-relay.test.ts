// ReplicaRelay between two "replicas" in one process (a LocalBus between them), each with a
// ChannelClient over real stdio children of the legacy fixture: an operation on the other
// replica's session runs there, with its progress and its streams; an owner that never answers
// means nothing was sent (TargetUnreachableError); one that falls silent after acknowledging
// fails the call as upstream_unavailable; a caller that lets go stops waiting at once.

import t, { type Test } from 'tap';
import { fileURLToPath } from 'node:url';
import { LocalBus, type MessageBus } from '../../src/bus/message-bus.js';
import { CausewayError } from '../../src/errors.js';
import type { JsonRpcNotification } from '../../src/jsonrpc.js';
import { createLogger } from '../../src/log.js';
import { ChannelClient } from '../../src/upstream/channel/channel-client.js';
import { SessionExpiredError, TargetUnreachableError } from '../../src/upstream/core/errors.js';
import { ReplicaRelay, type RelayOptions } from '../../src/upstream/replicas/replica-relay.js';
import type { SessionRef } from '../../src/upstream/core/headers.js';
import { StdioOpener } from '../../src/upstream/channel/stdio-channel.js';
import { call, textOf } from './tool-calls.js';
import { until } from '../helpers/until.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));
const INIT = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'relay-test', version: '1' } };
const log = createLogger('silent');

/** A bus that can stop carrying what one replica publishes: that replica looks dead to the others. */
class PartitionableBus implements MessageBus {
  cut = false;
  constructor(private readonly inner: MessageBus) {}
  publish(channel: string, message: string): Promise<number | undefined> {
    return this.cut ? Promise.resolve(0) : this.inner.publish(channel, message);
  }
  subscribe(channel: string, onMessage: (message: string) => void) {
    return this.inner.subscribe(channel, onMessage);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

function replica(t: Test, bus: MessageBus, id: string, opts: RelayOptions = {}): ReplicaRelay {
  const opener = new StdioOpener(
    'fixture',
    { command: process.execPath, args: [FIXTURE, '--stdio'], env: {}, cwd: undefined, maxLineBytes: 100_000 },
    log,
  );
  const local = new ChannelClient('fixture', opener, log, { requestTimeoutMs: 20_000, maxChannels: 4 });
  const relay = new ReplicaRelay('fixture', local, bus, id, 'test:', log, opts);
  t.teardown(() => relay.destroy());
  return relay;
}

/** Two replicas on one bus, and a session the first one runs. */
async function pair(t: Test, bus: MessageBus = new LocalBus(), ownerBus: MessageBus = bus, opts: RelayOptions = {}) {
  const owner = replica(t, ownerBus, 'owner', opts);
  const other = replica(t, bus, 'other', opts);
  await Promise.all([owner.start(), other.start()]);
  const hs = await owner.initialize(INIT);
  const ref: SessionRef = { sessionId: hs.sessionId, protocolVersion: hs.protocolVersion, target: hs.target };
  return { owner, other, ref };
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

t.test(
  "an operation on the other replica's session runs there: answer, progress, notify, stream, terminate",
  async (t) => {
    const { owner, other, ref } = await pair(t);
    t.equal(ref.target, 'owner', 'a session is stamped with the replica that runs it');

    t.equal(textOf(await other.request(ref, call('counter'), {})), '1');
    t.equal(textOf(await owner.request(ref, call('counter'), {})), '2', 'one session, whichever replica asks');

    const progress: JsonRpcNotification[] = [];
    const r = await other.request(ref, call('progress_many', { steps: 3 }, 'tok'), {
      onNotification: (n) => progress.push(n),
    });
    t.equal(textOf(r), 'sent 3');
    t.same(
      progress.map((n) => (n.params as { progress?: number }).progress),
      [1, 2, 3],
      "the call's notifications crossed over, in order, before its answer",
    );

    const heard: JsonRpcNotification[] = [];
    const stream = new AbortController();
    const opened = await other.openStream(ref, { onNotification: (n) => heard.push(n) }, stream.signal);
    t.not(opened, 'unsupported');
    t.equal(textOf(await other.request(ref, call('test_trigger_tool_change'), {})), 'Mutation triggered');
    await until(() => heard.length > 0, { what: 'a notification on the other replica' });
    t.equal(
      heard[0]?.method,
      'notifications/tools/list_changed',
      "the session's own messages reach a stream on the other replica",
    );

    const ending = rejection((opened as { done: Promise<void> }).done);
    await other.terminate(ref);
    const ended = await ending;
    t.type(ended, SessionExpiredError, 'the stream ends as a lost session when the session ends');
    t.type(
      await rejection(other.request(ref, call('counter'), {})),
      SessionExpiredError,
      'and the session is gone for both',
    );
  },
);

t.test(
  'no owner answers: TargetUnreachableError, so the pool may open the session where the request landed',
  async (t) => {
    const bus = new LocalBus();
    const other = replica(t, bus, 'other', { ackTimeoutMs: 100 });
    await other.start();
    const err = await rejection(
      other.request({ sessionId: 'x', protocolVersion: '2025-11-25', target: 'gone' }, call('counter'), {}),
    );
    t.type(err, TargetUnreachableError);
  },
);

t.test(
  'an owner silent after acknowledging fails the call as upstream_unavailable (its outcome unknown)',
  async (t) => {
    const shared = new LocalBus();
    const ownerBus = new PartitionableBus(shared);
    const { owner, other, ref } = await pair(t, shared, ownerBus, { heartbeatMs: 20, deadAfterMs: 200 });
    const slow = other.request(ref, call('slow', { ms: 5_000 }), {});
    // Cut once the owner is running the call (it acknowledged and heartbeats).
    const stats = () =>
      owner.request(ref, call('fixture_stats'), {}).then((r) => JSON.parse(textOf(r)) as { slowInFlight: number });
    await until(async () => (await stats()).slowInFlight > 0, { what: 'the owner to run the call' });
    ownerBus.cut = true;
    const err = await rejection(slow);
    t.ok(err instanceof CausewayError && err.reason === 'upstream_unavailable', 'upstream_unavailable');
    t.match((err as Error).message, /went away/);
  },
);

t.test('a caller that lets go stops waiting at once', async (t) => {
  const { other, ref } = await pair(t);
  const abort = new AbortController();
  const slow = other.request(ref, call('slow', { ms: 5_000 }), {}, abort.signal);
  abort.abort(new Error('client gone'));
  t.match(await rejection(slow), { message: 'client gone' });
  t.equal(textOf(await other.request(ref, call('counter'), {})), '1', 'the session serves on');
});
