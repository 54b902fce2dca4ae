// One upstream session's listeners on this replica (and, across replicas, its standing member:
// standing.ts). The session's change notifications come in over the bus and go to every member.
// While it has members the channel takes part in its key's coordination (coordination.ts): in
// the key's GET-stream lease (stream-lease.ts: if it holds the lease it holds the session's
// standalone GET stream, and takes the stream over when the previous holder is gone), and in the
// counts of resources/subscribe: subscribed when the first listener anywhere holds a URI,
// unsubscribed after the last. It follows the pool when the session is replaced (as holder,
// stream and resource subscriptions re-made on the new one, then a synthetic change of every
// kind, since some may have been missed). State changes run one at a time, in arrival order.

import { causewayError } from '../errors.js';
import { isErrorResponse, type JsonRpcNotification } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { sameRecord, sessionRef, type PooledSession, type SessionKey, type SessionPool } from '../pool/index.js';
import { SessionExpiredError, type IdMinter, type UpstreamSessionClient } from '../upstream/index.js';
import type { SessionEventBus } from './bus.js';
import {
  LocalCoordinator,
  type ChannelCoordination,
  type ListenCoordinator,
  type Transitions,
} from './coordination.js';
import { gapNotifications, isChange } from './filter.js';
import { StreamLease } from './stream-lease.js';

export { HOLDER_RELEASED, RELEASED_KEY } from './stream-lease.js';

export interface ChannelDeps {
  pool: SessionPool;
  client: UpstreamSessionClient;
  ids: IdMinter;
  bus: SessionEventBus;
  log: Logger;
  /** Who holds the GET stream and how subscriptions are counted across replicas; default: this replica alone. */
  coordinator?: ListenCoordinator;
}

export interface ChannelMember {
  /** Stands by for the session's stream (standing.ts) rather than listening: does not keep the session in use. */
  standing?: boolean;
  /** A change notification of this session, not yet filtered. */
  deliver(n: JsonRpcNotification): void;
  /** The channel cannot carry on (its upstream is gone): the member should end its stream. */
  lost(err: unknown): void;
}

const singleReplica = new LocalCoordinator();

export class SessionChannel {
  /** Each member with the URIs it holds a reference on. */
  private readonly members = new Map<ChannelMember, string[]>();
  /** This channel's count of members per URI. */
  private readonly refs = new Map<string, number>();
  private readonly coordination: ChannelCoordination;
  /** The key's GET-stream lease as this channel holds it (or not), and the stream that comes with it. */
  private readonly lease: StreamLease;
  private queued: Promise<unknown> = Promise.resolve();
  /** attach() calls queued but not yet run: the channel must not end under them. */
  private waiting = 0;
  private unsubscribe: (() => Promise<void>) | undefined;
  private opened = false;
  private ended = false;
  private broken: Error | undefined;
  /** The last publish of a change seen on an upstream stream: a shared cursor moves only after it. */
  private published: Promise<void> = Promise.resolve();
  /** This channel is in the key's shared state (it listened, or counted a URI): its leaving must be stated. */
  private stated = false;
  /** The member whose attach is under way (not yet among the members). */
  private joining: ChannelMember | undefined;

  constructor(
    readonly key: SessionKey,
    private session: PooledSession,
    private readonly deps: ChannelDeps,
    private readonly onEnd: (channel: SessionChannel) => void,
  ) {
    this.coordination = (deps.coordinator ?? singleReplica).join(key.id);
    this.lease = new StreamLease(key.id, this.coordination, deps, {
      session: () => this.session,
      published: () => this.published,
      publish: (n) => this.publish(n),
      replace: (gap) => this.followReplacement(gap),
      queue: (op) => this.queue(op),
    });
  }

  get size(): number {
    return this.members.size;
  }

  /** URIs this channel's members hold, each with its reference count. */
  get subscriptions(): ReadonlyMap<string, number> {
    return this.refs;
  }

  /** Whether this channel holds the session's GET stream (for tests and diagnostics). */
  get holdsStream(): boolean {
    return this.lease.holding;
  }

  /** Some member listens (rather than only standing by for the stream, standing.ts), or is joining to listen. */
  private get listened(): boolean {
    if (this.joining !== undefined && this.joining.standing !== true) return true;
    for (const m of this.members.keys()) if (m.standing !== true) return true;
    return false;
  }

  /** Joins `member`; resolves with the URIs the upstream accepted a subscription for. */
  attach(member: ChannelMember, uris: readonly string[]): Promise<string[]> {
    this.waiting += 1;
    return this.serial(async () => {
      this.waiting -= 1;
      try {
        // Listeners hear the key's changes; a member that only stands by hears nothing, and costs no subscription.
        if (member.standing !== true) await this.hear();
        this.joining = member;
        await this.open();
        for (const u of uris) this.count(u, 1);
        const listening = this.listened || member.standing !== true;
        const refused = await this.apply(await this.state(listening));
        const mine = [...refused].filter((u) => uris.includes(u));
        if (mine.length > 0) {
          for (const u of mine) this.count(u, -1);
          // Nothing to undo upstream for a URI it refused.
          await this.apply(await this.state(listening), new Set(mine));
        }
        const held = uris.filter((u) => !refused.has(u));
        this.members.set(member, held);
        return held;
      } catch (err) {
        if (this.members.size === 0 && this.waiting === 0) await this.end();
        throw err;
      } finally {
        this.joining = undefined;
      }
    });
  }

  /**
   * Leaves; the last member out closes the GET stream and ends the channel. URIs no one holds any more are
   * unsubscribed.
   */
  detach(member: ChannelMember): Promise<void> {
    return this.serial(async () => {
      const held = this.members.get(member);
      if (held === undefined) return;
      this.members.delete(member);
      for (const u of held) this.count(u, -1);
      await this.apply(await this.state(this.listened));
      if (this.members.size === 0 && this.waiting === 0) await this.end();
    });
  }

  /**
   * The listen tick: keeps a listened session in use and follows the pool to a replacement. The
   * shared state is only asked again where it is in doubt: a lease check that had no answer, a
   * count write that did not land, a holder's lease due to be restated. So a quiet channel costs
   * the coordination store nothing.
   */
  touch(): void {
    if (this.members.size === 0) return;
    this.queue(async () => {
      await this.follow();
      if (this.lease.due) await this.lease.renew();
      if (this.ended || this.broken) return;
      if (this.coordination.behind) await this.apply(await this.state(this.listened));
    });
  }

  /**
   * Replicas lapsed (bus/liveness.ts): a stream one of them held is taken over here, resuming
   * from its cursor, and the holder states the key's counts again, which drops theirs and
   * unsubscribes what only they held.
   */
  freed(replicas: readonly string[]): void {
    if (this.members.size === 0 || this.ended || this.broken) return;
    const takeOver = this.lease.freedBy(replicas);
    if (!takeOver && !this.lease.holding && this.refs.size === 0) return;
    this.queue(async () => {
      if (takeOver && !this.lease.holding) await this.lease.renew();
      if (this.ended || this.broken) return;
      if (this.lease.holding || this.refs.size > 0) await this.apply(await this.state(this.listened, true));
    });
  }

  /**
   * This replica was taken for lapsed: what it held may have been taken over; it claims again what is still its own.
   */
  resumed(): void {
    if (this.members.size === 0 || this.ended || this.broken) return;
    this.queue(async () => {
      await this.lease.renew();
      if (this.ended || this.broken) return;
      await this.apply(await this.state(this.listened));
    });
  }

  /**
   * The coordination store settled after coming back (bus/liveness.ts `settling`): a stream whose
   * lease nobody stated again meanwhile has no holder left, and is taken here.
   */
  settled(): void {
    if (this.members.size === 0 || this.ended || this.broken || this.lease.holding) return;
    this.queue(() => this.lease.renew());
  }

  /**
   * The key's stream was said free (RELEASED_KEY): take it, if anyone here waits on it. A holder
   * states its lease again: a replica that failed to take the stream from it let the lease go.
   */
  released(): void {
    if (this.members.size === 0 || this.lease.yielding) return;
    this.queue(async () => {
      await this.lease.renew();
    });
  }

  /**
   * States this channel's counts and whether it listens. A channel that only stands by and
   * counts nothing has nothing to state (unless told to, to drop lapsed replicas' counts).
   */
  private state(listening: boolean, always = false): Promise<Transitions> {
    if (!always && !listening && this.refs.size === 0 && !this.stated)
      return Promise.resolve({ subscribe: [], unsubscribe: [] });
    this.stated = listening || this.refs.size > 0;
    return this.coordination.sync(this.refs, listening);
  }

  private async follow(): Promise<void> {
    let current: PooledSession | undefined;
    if (!this.listened) {
      // Nobody listens: follow what the pool has, without keeping it in use.
      current = this.deps.pool.peek(this.key.id);
      if (current === undefined) return;
    } else {
      try {
        current = await this.deps.pool.acquire(this.key);
      } catch (err) {
        this.deps.log.debug({ err }, 'could not refresh the pooled session of a listen channel');
        return;
      }
    }
    if (current === this.session) return;
    if (sameRecord(current.record, this.session.record)) {
      this.session = current;
      return;
    }
    this.deps.log.info('the pool moved a listened key to another upstream session; following it');
    await this.switchTo(current, true);
  }

  private async open(): Promise<void> {
    if (this.broken) throw this.broken;
    if (this.opened) return;
    await this.lease.take();
    this.opened = true;
  }

  /** A new upstream session for the key. Its stream and subscriptions are the holder's to re-make. */
  private async switchTo(session: PooledSession, gap: boolean): Promise<void> {
    this.session = session;
    if (!this.lease.holding) return;
    await this.lease.restart();
    for (const uri of await this.coordination.uris()) {
      if (!(await this.call('resources/subscribe', uri, false))) {
        this.deps.log.warn('a resource subscription could not be renewed on the new upstream session');
      }
    }
    if (gap) await this.lease.announceGap();
  }

  /**
   * The upstream forgot the session: the pool replaces it (once, whoever asks) and the channel
   * follows. A stream only stood by for (nobody listens) is no reason to open an upstream session:
   * the channel follows one the pool has already, else breaks, and standing.ts stands by again
   * once a request opens one.
   */
  private async followReplacement(gap: boolean): Promise<void> {
    if (!this.listened) {
      const current = this.deps.pool.peek(this.key.id);
      if (current === undefined || sameRecord(current.record, this.session.record)) {
        throw causewayError('upstream_unavailable', 'The upstream forgot a session nobody listens on');
      }
      await this.switchTo(current, gap);
      return;
    }
    await this.switchTo(await this.deps.pool.replace(this.session), gap);
  }

  private count(uri: string, delta: number): void {
    const n = (this.refs.get(uri) ?? 0) + delta;
    if (n > 0) this.refs.set(uri, n);
    else this.refs.delete(uri);
  }

  /**
   * Brings the upstream in line with the key's counts: subscribes what went from 0, unsubscribes
   * what went to 0 (but `keep`). Resolves with the URIs whose subscription was refused.
   */
  private async apply(change: Transitions, keep?: ReadonlySet<string>): Promise<Set<string>> {
    const refused = new Set<string>();
    for (const uri of change.subscribe) {
      if (!(await this.call('resources/subscribe', uri, true))) refused.add(uri);
    }
    // A lost session took its subscriptions with it.
    const dropped = change.unsubscribe.filter((u) => !keep?.has(u));
    if (dropped.length === 0 || this.broken) return refused;
    for (const uri of dropped) await this.call('resources/unsubscribe', uri, false);
    // A channel elsewhere may have subscribed one of them again meanwhile, and its subscribe may have reached the
    // upstream first.
    for (const uri of await this.coordination.held(dropped)) await this.call('resources/subscribe', uri, false);
    return refused;
  }

  /** resources/subscribe or /unsubscribe upstream; false when refused or failed. */
  private async call(
    method: 'resources/subscribe' | 'resources/unsubscribe',
    uri: string,
    renew: boolean,
  ): Promise<boolean> {
    try {
      const r = await this.deps.client.request(
        sessionRef(this.session),
        { jsonrpc: '2.0', id: this.deps.ids.requestId(), method, params: { uri } },
        { onNotification: (n) => this.publish(n) },
      );
      if (!isErrorResponse(r)) return true;
      this.deps.log.info({ method, code: r.error.code }, 'the upstream refused a resource subscription change');
      return false;
    } catch (err) {
      if (err instanceof SessionExpiredError && renew) {
        await this.followReplacement(true);
        return this.call(method, uri, false);
      }
      this.deps.log.warn({ err, method }, 'a resource subscription change failed upstream');
      return false;
    }
  }

  /** Subscribes to the key's changes (once). */
  private async hear(): Promise<void> {
    this.unsubscribe ??= await this.deps.bus.subscribe(
      this.key.id,
      (n) => this.receive(n),
      () => this.missed(),
    );
  }

  /**
   * Changes other replicas published may have been missed (the shared bus was down for a while,
   * a Redis failover): as after any gap, every member hears that everything may have changed.
   */
  private missed(): void {
    if (this.ended || this.broken) return;
    this.deps.log.info(
      'changes of a listened session may have been missed while pub/sub was down; telling its listeners',
    );
    for (const n of gapNotifications(this.refs.keys())) this.receive(n);
  }

  /**
   * Bus delivery: what Causeway knows of the session that this change made stale is forgotten, then every member hears
   * of it.
   */
  private receive(n: JsonRpcNotification): void {
    this.session.facts.invalidate(n.method);
    for (const m of this.members.keys()) m.deliver(n);
  }

  /** A notification on one of this channel's upstream streams. */
  private publish(n: JsonRpcNotification): void {
    if (!isChange(n.method)) return;
    // This replica's own facts, whether or not it hears the key's bus.
    this.session.facts.invalidate(n.method);
    this.published = this.deps.bus
      .publish(this.key.id, n)
      .catch((err: unknown) => this.deps.log.warn({ err }, 'publishing a session event failed'));
  }

  private lose(err: unknown): void {
    if (this.broken || this.ended) return;
    this.broken = causewayError(
      'upstream_unavailable',
      'The upstream session behind this subscription is gone',
      undefined,
      err,
    );
    this.lease.abort();
    if (this.listened)
      this.deps.log.warn({ err }, 'a listen channel lost its upstream session; ending its listen streams');
    else this.deps.log.debug({ err }, 'the upstream session a stream was stood by for is gone');
    for (const m of [...this.members.keys()]) m.lost(this.broken);
  }

  private async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.lease.stop();
    this.onEnd(this);
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    await unsubscribe?.().catch((err: unknown) => this.deps.log.debug({ err }, 'leaving the session event bus failed'));
    await this.lease.handOver();
    const left = await this.coordination.leave();
    if (!this.broken) for (const uri of left.unsubscribe) await this.call('resources/unsubscribe', uri, false);
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const p = this.queued.then(op);
    this.queued = p.catch(() => undefined);
    return p;
  }

  /** Runs `op` in turn unless the channel has ended or broken by then; its failure breaks the channel. */
  private queue(op: () => Promise<void>): void {
    this.serial(async () => {
      if (this.ended || this.broken) return;
      await op();
    }).catch((err: unknown) => this.lose(err));
  }
}
