// One channel's part in its key's GET-stream lease (coordination.ts), and the stream that comes
// with it: only the holder keeps the session's standalone GET stream open. The lease is taken at
// the channel's first attach (resuming from the cursor the last holder shared, or else telling
// listeners everything may have changed), restated on the tick, let go when another replica took
// it, taken over when its holder lapsed or handed it over, and handed over when the channel ends.
// The channel (channel.ts) decides when; this decides what holding means.

import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonRpcNotification } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { sessionRef, type PooledSession } from '../pool/index.js';
import { SessionExpiredError, type UpstreamSessionClient } from '../upstream/index.js';
import type { SessionEventBus } from './bus.js';
import { LEASE_TTL_MS, type ChannelCoordination, type HoldResult } from './coordination.js';
import { gapNotifications } from './filter.js';

type StreamHandlers = Parameters<UpstreamSessionClient['openStream']>[1];

/**
 * First GET attempts before a listen fails; a stream the upstream has not yet seen close may be refused (409) for a
 * moment.
 */
const OPEN_ATTEMPTS = 4;
const OPEN_BACKOFF_MS = 100;
/**
 * A take-over the upstream refuses is given back at once (its holder still streams), and asked for again after a
 * back-off that doubles from OPEN_BACKOFF_MS up to this.
 */
const RETAKE_MAX_MS = 5_000;

/**
 * Sent by a channel that gives the GET-stream lease up, under RELEASED_KEY with the session key
 * in its params, so a channel of that key elsewhere takes it at once. Never a change: no listener
 * sees it. One key for every session: a channel that only stands by hears no key of its own.
 */
export const HOLDER_RELEASED = 'causeway/listen-holder-released';
export const RELEASED_KEY = 'listen|released';

export interface LeaseDeps {
  client: UpstreamSessionClient;
  bus: SessionEventBus;
  log: Logger;
}

/** What the lease needs of its channel. */
export interface LeaseHost {
  /** The channel's upstream session now. */
  session(): PooledSession;
  /** The last publish of a change seen on the channel's streams: a shared cursor moves only after it. */
  published(): Promise<void>;
  /** A notification on the stream. */
  publish(n: JsonRpcNotification): void;
  /**
   * The upstream forgot the session: follow its replacement (`gap`: tell every listener everything may have changed).
   */
  replace(gap: boolean): Promise<void>;
  /** Runs `op` in the channel's queue, unless the channel has ended or broken by then; a failure breaks the channel. */
  queue(op: () => Promise<void>): void;
}

export class StreamLease {
  /** The channel holds the key's GET-stream lease (and so the stream). */
  private held = false;
  private holder: AbortController | undefined;
  /** The last lease check had no answer (the coordination store was away): the tick asks again. */
  private unsure = false;
  /** When this holder last stated its lease: it restates it after half its TTL, on the tick. */
  private heldAt = 0;
  /** A take-over failed and the stream was said free: until the next check, this channel leaves it to others. */
  private yielded = false;
  /** Take-overs refused in a row, and the timer that asks again after the last one. */
  private refusals = 0;
  private retake: NodeJS.Timeout | undefined;

  constructor(
    private readonly keyId: string,
    private readonly coordination: ChannelCoordination,
    private readonly deps: LeaseDeps,
    private readonly host: LeaseHost,
  ) {}

  get holding(): boolean {
    return this.held;
  }

  /** The tick asks again: the last check had no answer, or this holder's lease is due to be restated. */
  get due(): boolean {
    return this.unsure || (this.held && Date.now() - this.heldAt > LEASE_TTL_MS / 2);
  }

  /** `replicas` lapsed: whether the stream may have been theirs, for this channel to take over. */
  freedBy(replicas: readonly string[]): boolean {
    return !this.held && (this.unsure || this.coordination.heldByOneOf(replicas));
  }

  /**
   * At the channel's first attach: takes the lease (or learns that another channel has it) and, as
   * holder, opens the stream. Listeners elsewhere went without a stream for a while: it resumes
   * where the last holder left off, or else tells them everything may have changed.
   */
  async take(): Promise<void> {
    const lease = await this.hold(true);
    // Unknown (the coordination store is away): hold it, as a lone replica would.
    this.held = lease !== 'taken';
    if (!this.held) return;
    const others = lease === 'acquired-others';
    let resumed = false;
    try {
      resumed = await this.startStream(others ? await this.sharedCursor() : undefined, lease === 'acquired');
    } catch (err) {
      if (!(err instanceof SessionExpiredError)) throw err;
      await this.host.replace(false);
    }
    // Published before the member that took the lease joins.
    if (others && !resumed) await this.announceGap();
  }

  /**
   * Asks the coordination again and acts on the answer: let the stream go, or take it over. Not
   * while the coordination settles (its store came back moments ago, perhaps empty): a lease found
   * free then may be one whose holder still streams and has yet to state it again, and taking it
   * would only get the GET refused (409) and the holder told to let go. A holder states its lease
   * at once; the others ask again when the window ends (`SessionChannel.settled`) or on the tick.
   */
  async renew(): Promise<void> {
    if (!this.held && this.coordination.settling) {
      this.unsure = true;
      return;
    }
    await this.actOn(await this.hold());
  }

  /** A new upstream session: the holder opens its stream afresh (its event ids start over). */
  async restart(): Promise<void> {
    await this.startStream();
  }

  /** After a gap nothing is known about what changed: tell every listener of the key everything may have. */
  async announceGap(): Promise<void> {
    for (const n of gapNotifications(await this.coordination.uris())) await this.deps.bus.publish(this.keyId, n);
  }

  /** The channel broke: its stream is let go. */
  abort(): void {
    this.holder?.abort();
  }

  /** The channel ends: its stream is let go (the lease is handed over after, `handOver`). */
  stop(): void {
    this.holder?.abort();
    this.holder = undefined;
    clearTimeout(this.retake);
  }

  /**
   * The channel ended: a holder gives the lease up and says so, so that a channel of the key elsewhere takes it at
   * once.
   */
  async handOver(): Promise<void> {
    if (!this.held) return;
    this.held = false;
    await this.coordination.release();
    await this.sayReleased();
  }

  private async sayReleased(): Promise<void> {
    await this.deps.bus
      .publish(RELEASED_KEY, { jsonrpc: '2.0', method: HOLDER_RELEASED, params: { key: this.keyId } })
      .catch((err: unknown) => this.deps.log.debug({ err }, 'announcing the GET stream free failed'));
  }

  /**
   * This channel has just failed to take the stream over and said so: a release it hears is its own, and the tick asks
   * again.
   */
  get yielding(): boolean {
    return this.yielded;
  }

  /** The lease, as the coordination answers; remembers what the tick must ask again. */
  private async hold(fresh = false): Promise<HoldResult> {
    this.yielded = false;
    const lease = await this.coordination.hold(fresh);
    this.unsure = lease === 'unknown';
    if (lease !== 'taken' && lease !== 'unknown') this.heldAt = Date.now();
    return lease;
  }

  /** Acts on the lease as a later check found it. */
  private async actOn(lease: HoldResult): Promise<void> {
    if (lease === 'unknown' || lease === 'renewed') return;
    if (lease === 'taken') {
      if (!this.held) return;
      this.deps.log.warn('another replica took the GET stream of a listened session over; leaving it to that one');
      this.held = false;
      this.stop();
      return;
    }
    if (this.held) return;
    // The holder is gone (or let go): this channel holds the stream from now on, from where the
    // old holder left it if it shared a cursor on this session.
    this.held = true;
    this.deps.log.info('taking over the GET stream of a listened session');
    let resumed: boolean;
    try {
      // One GET: a refusal most likely means the old holder still streams, and asking again at once would not change
      // it.
      resumed = await this.startStream(await this.sharedCursor(), false, 1);
      this.refusals = 0;
    } catch (err) {
      if (err instanceof SessionExpiredError) {
        await this.host.replace(true);
        return;
      }
      // The stream may still be held by its last holder, which stops only once it hears the lease
      // was taken (its next beat): it must not then find nobody holding it. Said free, so that
      // holder states its lease again (or, having stopped, takes it back); this channel asks
      // again after a back-off, in case nobody answers (a graceful holder's stream the upstream
      // has not yet seen close).
      this.deps.log.warn({ err }, 'could not take the GET stream over; handing it back');
      this.held = false;
      this.stop();
      await this.coordination.release();
      this.unsure = true;
      this.yielded = true;
      await this.sayReleased();
      this.askAgainLater();
      return;
    }
    // Resumed: the upstream replays what the old holder had not handed on; nothing to make up for.
    if (!resumed) await this.announceGap();
  }

  /** After a refused take-over: asks for the lease again once a back-off passed, doubling with each refusal. */
  private askAgainLater(): void {
    const delayMs = Math.min(RETAKE_MAX_MS, OPEN_BACKOFF_MS * 2 ** this.refusals);
    this.refusals += 1;
    clearTimeout(this.retake);
    this.retake = setTimeout(() => this.host.queue(() => (this.held ? Promise.resolve() : this.renew())), delayMs);
    this.retake.unref();
  }

  /** The event id the key's holder last shared, if it was read on the channel's current session. */
  private async sharedCursor(): Promise<string | undefined> {
    const shared = await this.coordination.cursor();
    if (shared === undefined) return undefined;
    const sp = shared.indexOf(' ');
    if (sp < 0 || shared.slice(0, sp) !== sessionMark(this.host.session())) return undefined;
    const id = shared.slice(sp + 1);
    return id === '' ? undefined : id;
  }

  /**
   * Opens the GET stream of the current session; resolves once the upstream accepted it (or has
   * none), true if it resumed from `resumeFrom` (an event id another holder shared). A resume the
   * upstream keeps refusing falls back to a fresh stream. Event ids read on the stream are shared
   * as the key's cursor once the change they carried is published.
   */
  private async startStream(resumeFrom?: string, forgotten = false, attempts = OPEN_ATTEMPTS): Promise<boolean> {
    this.holder?.abort();
    const holder = new AbortController();
    this.holder = holder;
    const session = this.host.session();
    const ref = sessionRef(session);
    const mark = sessionMark(session);
    const handlers: StreamHandlers = {
      onNotification: (n) => this.host.publish(n),
      afterEvent: (id) => {
        void this.host.published().then(() => {
          if (this.holder === holder && this.held) this.coordination.mark(`${mark} ${id}`);
        });
      },
    };
    // A fresh stream starts after whatever an older cursor points at: resuming from it would repeat changes already
    // delivered.
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
        if (from !== undefined)
          this.deps.log.info('resumed the GET stream of a listened session where its last holder left it');
        return from !== undefined;
      } catch (err) {
        if (holder.signal.aborted) return false;
        if (err instanceof SessionExpiredError) throw err;
        if (attempt >= attempts) {
          if (from === undefined) throw err;
          this.deps.log.info(
            { err },
            'the upstream would not resume the GET stream from the shared cursor; opening it afresh',
          );
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
        this.host.queue(async () => {
          if (this.holder !== holder) return;
          if (err instanceof SessionExpiredError) {
            this.deps.log.info('the upstream forgot a listened session; listening on its replacement');
            await this.host.replace(true);
            return;
          }
          this.deps.log.warn({ err }, 'upstream GET stream lost; opening it again');
          await this.startStream();
          await this.announceGap();
        });
      },
    );
  }
}

/**
 * What a shared cursor is tied to: an event id means nothing on another upstream session. Not the session id itself.
 */
function sessionMark(s: PooledSession): string {
  return createHash('sha256')
    .update(`${s.record.target ?? ''}\n${s.record.sessionId ?? ''}`)
    .digest('hex')
    .slice(0, 16);
}
