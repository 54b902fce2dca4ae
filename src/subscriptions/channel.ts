// One upstream session's listeners on this replica (and, across replicas, its standing member:
// standing.ts). The session's change notifications come in over the bus and go to every member. While it has members the channel takes part in its key's
// coordination (coordination.ts): if it holds the key's GET-stream lease it holds the session's
// standalone GET stream (the upstream client resumes it with Last-Event-ID), follows the pool when
// the session is replaced (stream and resource subscriptions re-made on the new one, then a
// synthetic change of every kind, since some may have been missed), and takes the stream over
// when the previous holder is gone, resuming it from the event id the old holder shared.
// Otherwise it only hears the bus. resources/subscribe is
// counted across every channel of the key: subscribed when the first listener anywhere holds a
// URI, unsubscribed after the last. State changes run one at a time, in arrival order.

import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { causewayError } from '../errors.js';
import { isErrorResponse, type JsonRpcNotification } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { sameRecord, sessionRef, type PooledSession, type SessionKey, type SessionPool } from '../pool/index.js';
import { SessionExpiredError, type IdMinter, type UpstreamSessionClient } from '../upstream/index.js';
import type { SessionEventBus } from './bus.js';
import { LEASE_TTL_MS, LocalCoordinator, type ChannelCoordination, type HoldResult, type ListenCoordinator, type Transitions } from './coordination.js';
import { gapNotifications, isChange } from './filter.js';

type StreamHandlers = Parameters<UpstreamSessionClient['openStream']>[1];

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

/** First GET attempts before a listen fails; a stream the upstream has not yet seen close may be refused (409) for a moment. */
const OPEN_ATTEMPTS = 4;
const OPEN_BACKOFF_MS = 100;

/**
 * Sent by a channel that gives the GET-stream lease up, under RELEASED_KEY with the session key
 * in its params, so a channel of that key elsewhere takes it at once. Never a change: no listener
 * sees it. One key for every session: a channel that only stands by hears no key of its own.
 */
export const HOLDER_RELEASED = 'causeway/listen-holder-released';
export const RELEASED_KEY = 'listen|released';

const singleReplica = new LocalCoordinator();

export class SessionChannel {
  /** Each member with the URIs it holds a reference on. */
  private readonly members = new Map<ChannelMember, string[]>();
  /** This channel's count of members per URI. */
  private readonly refs = new Map<string, number>();
  private readonly coordination: ChannelCoordination;
  private queue: Promise<unknown> = Promise.resolve();
  /** attach() calls queued but not yet run: the channel must not end under them. */
  private waiting = 0;
  /** This channel holds the key's GET-stream lease (and so the stream). */
  private holding = false;
  private holder: AbortController | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private opened = false;
  private ended = false;
  private broken: Error | undefined;
  /** The last publish of a change seen on an upstream stream: a shared cursor moves only after it. */
  private published: Promise<void> = Promise.resolve();
  /** The last lease check had no answer (the coordination store was away): the tick asks again. */
  private unsure = false;
  /** When this holder last stated its lease: it restates it after half its TTL, on the tick. */
  private heldAt = 0;
  /** This channel is in the key's shared state (it listened, or counted a URI): its leaving must be stated. */
  private stated = false;

  constructor(
    readonly key: SessionKey,
    private session: PooledSession,
    private readonly deps: ChannelDeps,
    private readonly onEnd: (channel: SessionChannel) => void,
  ) {
    this.coordination = (deps.coordinator ?? singleReplica).join(key.id);
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
    return this.holding;
  }

  /** Some member listens (rather than only standing by for the stream, standing.ts). */
  private get listened(): boolean {
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
      }
    });
  }

  /** Leaves; the last member out closes the GET stream and ends the channel. URIs no one holds any more are unsubscribed. */
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
    this.serial(async () => {
      if (this.ended || this.broken) return;
      await this.follow();
      if (this.unsure || (this.holding && Date.now() - this.heldAt > LEASE_TTL_MS / 2)) await this.renew(await this.hold());
      if (this.ended || this.broken) return;
      if (this.coordination.behind) await this.apply(await this.state(this.listened));
    }).catch((err: unknown) => this.lose(err));
  }

  /**
   * Replicas lapsed (bus/liveness.ts): a stream one of them held is taken over here, resuming
   * from its cursor, and the holder states the key's counts again, which drops theirs and
   * unsubscribes what only they held.
   */
  freed(replicas: readonly string[]): void {
    if (this.members.size === 0 || this.ended || this.broken) return;
    const takeOver = !this.holding && (this.unsure || this.coordination.heldByOneOf(replicas));
    if (!takeOver && !this.holding && this.refs.size === 0) return;
    this.serial(async () => {
      if (this.ended || this.broken) return;
      if (takeOver && !this.holding) await this.renew(await this.hold());
      if (this.ended || this.broken) return;
      if (this.holding || this.refs.size > 0) await this.apply(await this.state(this.listened, true));
    }).catch((err: unknown) => this.lose(err));
  }

  /** This replica was taken for lapsed: what it held may have been taken over; it claims again what is still its own. */
  resumed(): void {
    if (this.members.size === 0 || this.ended || this.broken) return;
    this.serial(async () => {
      if (this.ended || this.broken) return;
      await this.renew(await this.hold());
      if (this.ended || this.broken) return;
      await this.apply(await this.state(this.listened));
    }).catch((err: unknown) => this.lose(err));
  }

  /** The lease, as the coordination answers; remembers what the tick must ask again. */
  private async hold(fresh = false): Promise<HoldResult> {
    const lease = await this.coordination.hold(fresh);
    this.unsure = lease === 'unknown';
    if (lease !== 'taken' && lease !== 'unknown') this.heldAt = Date.now();
    return lease;
  }

  /**
   * States this channel's counts and whether it listens. A channel that only stands by and
   * counts nothing has nothing to state (unless told to, to drop lapsed replicas' counts).
   */
  private state(listening: boolean, always = false): Promise<Transitions> {
    if (!always && !listening && this.refs.size === 0 && !this.stated) return Promise.resolve({ subscribe: [], unsubscribe: [] });
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

  /** Acts on the lease as the tick found it. */
  private async renew(lease: HoldResult): Promise<void> {
    if (lease === 'unknown' || lease === 'renewed') return;
    if (lease === 'taken') {
      if (!this.holding) return;
      this.deps.log.warn('another replica took the GET stream of a listened session over; leaving it to that one');
      this.holding = false;
      this.holder?.abort();
      this.holder = undefined;
      return;
    }
    if (this.holding) return;
    // The holder is gone (or let go): this channel holds the stream from now on, from where the
    // old holder left it if it shared a cursor on this session.
    this.holding = true;
    this.deps.log.info('taking over the GET stream of a listened session');
    let resumed: boolean;
    try {
      resumed = await this.startStream(await this.sharedCursor());
    } catch (err) {
      if (err instanceof SessionExpiredError) {
        await this.switchTo(await this.deps.pool.replace(this.session), true);
        return;
      }
      this.deps.log.warn({ err }, 'could not take the GET stream over; another listening replica may');
      this.holding = false;
      this.holder?.abort();
      this.holder = undefined;
      await this.coordination.release();
      return;
    }
    // Resumed: the upstream replays what the old holder had not handed on; nothing to make up for.
    if (!resumed) await this.announceGap();
  }

  /** The event id the key's holder last shared, if it was read on this channel's current session. */
  private async sharedCursor(): Promise<string | undefined> {
    const shared = await this.coordination.cursor();
    if (shared === undefined) return undefined;
    const sp = shared.indexOf(' ');
    if (sp < 0 || shared.slice(0, sp) !== sessionMark(this.session)) return undefined;
    const id = shared.slice(sp + 1);
    return id === '' ? undefined : id;
  }

  private async open(): Promise<void> {
    if (this.broken) throw this.broken;
    if (this.opened) return;
    const lease = await this.hold(true);
    // Unknown (the coordination store is away): hold it, as a lone replica would.
    this.holding = lease !== 'taken';
    if (this.holding) {
      // Listeners elsewhere went without a stream for a while: resume where the last holder left
      // off, or else tell them everything may have changed (published before this member joins).
      const others = lease === 'acquired-others';
      let resumed = false;
      try {
        resumed = await this.startStream(others ? await this.sharedCursor() : undefined, lease === 'acquired');
      } catch (err) {
        if (!(err instanceof SessionExpiredError)) throw err;
        await this.switchTo(await this.deps.pool.replace(this.session), false);
      }
      if (others && !resumed) await this.announceGap();
    }
    this.opened = true;
  }

  /**
   * Opens the GET stream of the current session; resolves once the upstream accepted it (or has
   * none), true if it resumed from `resumeFrom` (an event id another holder shared). A resume the
   * upstream keeps refusing falls back to a fresh stream. Event ids read on the stream are shared
   * as the key's cursor once the change they carried is published.
   */
  private async startStream(resumeFrom?: string, forgotten = false): Promise<boolean> {
    this.holder?.abort();
    const holder = new AbortController();
    this.holder = holder;
    const ref = sessionRef(this.session);
    const mark = sessionMark(this.session);
    const handlers: StreamHandlers = {
      onNotification: (n) => this.publish(n),
      afterEvent: (id) => {
        void this.published.then(() => {
          if (this.holder === holder && this.holding) this.coordination.mark(`${mark} ${id}`);
        });
      },
    };
    // A fresh stream starts after whatever an older cursor points at: resuming from it would repeat changes already delivered.
    if (resumeFrom === undefined && !forgotten) this.coordination.mark(undefined);
    let from = resumeFrom;
    for (let attempt = 1; ; attempt++) {
      try {
        const opened = await this.deps.client.openStream(ref, handlers, holder.signal, from);
        if (opened === 'unsupported') {
          this.deps.log.info('the upstream offers no GET stream; only changes sent on call streams reach listeners');
          return false;
        }
        this.watch(opened.done, holder);
        if (from !== undefined) this.deps.log.info('resumed the GET stream of a listened session where its last holder left it');
        return from !== undefined;
      } catch (err) {
        if (holder.signal.aborted) return false;
        if (err instanceof SessionExpiredError) throw err;
        if (attempt >= OPEN_ATTEMPTS) {
          if (from === undefined) throw err;
          this.deps.log.info({ err }, 'the upstream would not resume the GET stream from the shared cursor; opening it afresh');
          from = undefined;
          attempt = 0;
          this.coordination.mark(undefined);
          continue;
        }
        await sleep(OPEN_BACKOFF_MS * attempt, undefined, { signal: holder.signal }).catch(() => undefined);
        if (holder.signal.aborted) return false;
      }
    }
  }

  /** The stream ends only when it cannot be resumed: re-make it, on a new session if the upstream forgot this one. */
  private watch(done: Promise<void>, holder: AbortController): void {
    done.then(
      () => {
        if (!holder.signal.aborted) this.deps.log.info('the upstream stopped offering its GET stream');
      },
      (err: unknown) => {
        if (holder.signal.aborted) return;
        this.serial(async () => {
          if (this.holder !== holder || this.ended || this.broken) return;
          if (err instanceof SessionExpiredError) {
            this.deps.log.info('the upstream forgot a listened session; listening on its replacement');
            await this.switchTo(await this.deps.pool.replace(this.session), true);
            return;
          }
          this.deps.log.warn({ err }, 'upstream GET stream lost; opening it again');
          await this.startStream();
          await this.announceGap();
        }).catch((e: unknown) => this.lose(e));
      },
    );
  }

  /** A new upstream session for the key. Its stream and subscriptions are the holder's to re-make. */
  private async switchTo(session: PooledSession, gap: boolean): Promise<void> {
    this.session = session;
    if (!this.holding) return;
    await this.startStream();
    for (const uri of await this.coordination.uris()) {
      if (!(await this.call('resources/subscribe', uri, false))) {
        this.deps.log.warn('a resource subscription could not be renewed on the new upstream session');
      }
    }
    if (gap) await this.announceGap();
  }

  /** After a gap nothing is known about what changed: tell every listener of the key everything may have. */
  private async announceGap(): Promise<void> {
    for (const n of gapNotifications(await this.coordination.uris())) await this.deps.bus.publish(this.key.id, n);
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
    // A channel elsewhere may have subscribed one of them again meanwhile, and its subscribe may have reached the upstream first.
    for (const uri of await this.coordination.held(dropped)) await this.call('resources/subscribe', uri, false);
    return refused;
  }

  /** resources/subscribe or /unsubscribe upstream; false when refused or failed. */
  private async call(method: 'resources/subscribe' | 'resources/unsubscribe', uri: string, renew: boolean): Promise<boolean> {
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
        await this.switchTo(await this.deps.pool.replace(this.session), true);
        return this.call(method, uri, false);
      }
      this.deps.log.warn({ err, method }, 'a resource subscription change failed upstream');
      return false;
    }
  }

  /** Subscribes to the key's changes (once). */
  private async hear(): Promise<void> {
    this.unsubscribe ??= await this.deps.bus.subscribe(this.key.id, (n) => this.receive(n));
  }

  /** The key's holder elsewhere let the stream go (RELEASED_KEY): take it, if anyone here waits on it. */
  released(): void {
    if (this.holding || this.members.size === 0) return;
    this.serial(async () => {
      if (this.ended || this.broken || this.holding) return;
      await this.renew(await this.hold());
    }).catch((err: unknown) => this.lose(err));
  }

  /** Bus delivery: what Causeway knows of the session that this change made stale is forgotten, then every member hears of it. */
  private receive(n: JsonRpcNotification): void {
    this.session.facts.invalidate(n.method);
    for (const m of this.members.keys()) m.deliver(n);
  }

  /** A notification on one of this channel's upstream streams. */
  private publish(n: JsonRpcNotification): void {
    if (!isChange(n.method)) return;
    // This replica's own facts, whether or not it hears the key's bus.
    this.session.facts.invalidate(n.method);
    this.published = this.deps.bus.publish(this.key.id, n).catch((err: unknown) => this.deps.log.warn({ err }, 'publishing a session event failed'));
  }

  private lose(err: unknown): void {
    if (this.broken || this.ended) return;
    this.broken = causewayError('upstream_unavailable', 'The upstream session behind this subscription is gone', undefined, err);
    this.holder?.abort();
    this.deps.log.warn({ err }, 'a listen channel lost its upstream session; ending its listen streams');
    for (const m of [...this.members.keys()]) m.lost(this.broken);
  }

  private async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.holder?.abort();
    this.holder = undefined;
    this.onEnd(this);
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    await unsubscribe?.().catch((err: unknown) => this.deps.log.debug({ err }, 'leaving the session event bus failed'));
    if (this.holding) {
      this.holding = false;
      await this.coordination.release();
      await this.deps.bus
        .publish(RELEASED_KEY, { jsonrpc: '2.0', method: HOLDER_RELEASED, params: { key: this.key.id } })
        .catch((err: unknown) => this.deps.log.debug({ err }, 'announcing the GET stream free failed'));
    }
    const left = await this.coordination.leave();
    if (!this.broken) for (const uri of left.unsubscribe) await this.call('resources/unsubscribe', uri, false);
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const p = this.queue.then(op);
    this.queue = p.catch(() => undefined);
    return p;
  }
}

/** What a shared cursor is tied to: an event id means nothing on another upstream session. Not the session id itself. */
function sessionMark(s: PooledSession): string {
  return createHash('sha256').update(`${s.record.target ?? ''}\n${s.record.sessionId ?? ''}`).digest('hex').slice(0, 16);
}
