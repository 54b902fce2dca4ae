// subscriptions/listen on the modern face [SUBS]: the acknowledgment first, naming only what this
// upstream can back; then the opted-in change notifications, tagged with the subscription id;
// `:` keep-alive comments between; on drain the closing result, on a lost upstream an abrupt end
// (the client re-listens). A client that goes away frees its slot, its resource subscriptions and,
// if it was the last listener of its session, the upstream GET stream. Listen streams are bounded
// per principal and per replica.

import { SseStream, type HttpResponse } from '../egress/index.js';
import type { ModernRequest } from '../envelope/index.js';
import { causewayError } from '../errors.js';
import { isObject, type JsonRpcNotification } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import type { PooledSession, SessionKey } from '../pool/index.js';
import type { UpstreamSessionClient } from '../upstream/index.js';
import type { Span } from '../tracing/index.js';
import { HOLDER_RELEASED, RELEASED_KEY, SessionChannel, type ChannelDeps, type ChannelMember } from './channel.js';
import { StandingBy, type StandingPolicy } from './standing.js';
import { listenTickMs } from './coordination.js';
import { declaresTasks, TASKS_REQUIRED } from '../dialect/index.js';
import {
  acknowledgment,
  admits,
  closingResult,
  forStream,
  honour,
  isChange,
  isEmpty,
  readFilter,
  unionOf,
  type ListenFilter,
} from './filter.js';

export interface SubscriptionLimits {
  /** Listen streams open at once on this replica. */
  maxListeners: number;
  /** Listen streams open at once per principal on this replica. */
  maxPerPrincipal: number;
  /**
   * Interval of `:` keep-alive comments, and of the channels' housekeeping; 0 sends no comments (housekeeping then
   * every 15 s).
   */
  keepAliveMs: number;
  /** Most resourceSubscriptions URIs in one listen request. */
  maxUrisPerListen: number;
  /** Longest a request that brought a new session waits for its GET stream (across replicas); default 10 s. */
  standWaitMs?: number;
}

/** What channels need, with the upstream client of each channel's key. */
export type SubscriptionDeps = Omit<ChannelDeps, 'client'> & {
  clientOf(upstream: string): UpstreamSessionClient;
  /** Which GET streams are held with nobody listening, by upstream (standing.ts); default: auto, nothing learned. */
  standing?: StandingPolicy;
};

/**
 * One upstream session a listen follows; a federated mount's listen follows one per member, and
 * for a 2026 member (no session: it serves listen itself) that member's own listen (`remote`).
 */
export type ListenPart =
  | {
      key: SessionKey;
      remote?: undefined;
      /** The requested resourceSubscriptions this part serves; undefined: all of them. */
      uris?: readonly string[];
    }
  | { key?: undefined; remote: RemoteListen; uris?: readonly string[] };

/** A listen another server serves: opened for a filter, its notifications handed on until it ends. */
export interface RemoteListen {
  /**
   * Opens it for `filter`; resolves once acknowledged, with what it honours and how to close it.
   * `lost` is called when it ends by itself afterwards.
   */
  open(
    filter: ListenFilter,
    deliver: (n: JsonRpcNotification) => void,
    lost: () => void,
  ): Promise<{ honoured: ListenFilter; close(): void }>;
}

export interface ListenExchange {
  request: ModernRequest;
  parts: readonly ListenPart[];
  principal: string;
  res: HttpResponse;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  log: Logger;
  /**
   * The listen request's server span, when tracing records it: one event per notification sent, and how the stream
   * ended.
   */
  span?: Span;
}

type Ending = 'drain' | 'client' | 'lost';

interface OpenListen {
  stream: SseStream;
  end(why: Ending): void;
}

export class Subscriptions {
  private readonly channels = new Map<string, SessionChannel>();
  private readonly open = new Set<OpenListen>();
  private readonly running = new Set<Promise<void>>();
  private readonly perPrincipal = new Map<string, number>();
  private count = 0;
  private ticker: NodeJS.Timeout | undefined;
  /** The subscription to hand-overs (RELEASED_KEY), across replicas. */
  private releases: Promise<(() => Promise<void>) | undefined> | undefined;
  private closing = false;

  /** The stands by the GET streams held whether or not anybody listens (standing.ts). */
  private readonly standing: StandingBy;

  constructor(
    private readonly deps: SubscriptionDeps,
    private readonly limits: SubscriptionLimits,
  ) {
    // Across replicas: a replica that lapsed leaves its streams to be taken over, and its counts
    // to be dropped, by the channels of the keys it held; this one's own lapse is claimed back.
    deps.coordinator?.watch?.({
      lapsed: (replicas) => {
        for (const c of this.channels.values()) c.freed(replicas);
      },
      resumed: () => {
        for (const c of this.channels.values()) c.resumed();
      },
      settled: () => {
        for (const c of this.channels.values()) c.settled();
      },
    });
    this.standing = new StandingBy({
      pool: deps.pool,
      channelFor: (key, session) => this.channelFor(key, session),
      hasStream: (upstream) => deps.clientOf(upstream).hasStandaloneStream?.() === true,
      policy: deps.standing ?? {},
      log: deps.log,
      waitMs: limits.standWaitMs ?? 10_000,
    });
  }

  /**
   * A session new to this replica's pool: the key's channel stands by for its GET stream where
   * something waits on it, and its upstream gets its scout (standing.ts). Resolves once the stream
   * is up if this replica holds it, bounded.
   */
  stand(session: PooledSession): Promise<void> {
    if (this.closing) return Promise.resolve();
    const standing = this.standing.stand(session);
    if (this.standing.size > 0) this.startTicker();
    return standing;
  }

  /**
   * An upstream was seen asking outside a call: the sessions it may ask get their streams now, not on the next tick.
   */
  asksLearned(): void {
    if (this.closing) return;
    this.standing.sweep();
    if (this.standing.size > 0) this.startTicker();
  }

  /** Listen streams on this replica, counting those not yet acknowledged. */
  get size(): number {
    return this.count;
  }

  /** Sessions' GET streams this replica stands by for (held whether or not anybody listens), scouts included. */
  get standingSize(): number {
    return this.standing.size;
  }

  /** The channel of a session key, if it has listeners here or stands by for its stream (for tests and diagnostics). */
  channel(keyId: string): SessionChannel | undefined {
    return this.channels.get(keyId);
  }

  /**
   * Whether a change the upstream tells of what was read on `session` (with `scope`, as the
   * gateway cache keeps it) reaches Causeway whether or not anybody listens: the session's own
   * GET stream is held, or the answer is public and the upstream's scout is up (standing.ts).
   */
  holdsStream(session: PooledSession, scope?: 'public' | 'private'): boolean {
    return this.standing.hears(session, scope);
  }

  /** Serves one subscriptions/listen. Throws (nothing written yet) when it cannot be acknowledged. */
  listen(ex: ListenExchange): Promise<void> {
    const run = this.serve(ex);
    const tracked = run.catch(() => undefined);
    this.running.add(tracked);
    void tracked.finally(() => this.running.delete(tracked));
    return run;
  }

  /** A task of `principal` changed: notifications/tasks for the listen streams that named it, on every replica. */
  publishTask(principal: string, n: JsonRpcNotification): void {
    this.deps.bus
      .publish(taskEventsKey(principal), n)
      .catch((err: unknown) => this.deps.log.warn({ err }, 'publishing a task event failed'));
  }

  /**
   * A notification that arrived on a call's stream of `session` (tools/call, lists, ...): what is
   * known of the session goes stale (SessionFacts), and the key's listeners, wherever they are, hear of it.
   */
  publishChange(session: PooledSession, n: JsonRpcNotification): void {
    if (!isChange(n.method)) return;
    session.facts.invalidate(n.method);
    this.deps.bus
      .publish(session.key.id, n)
      .catch((err: unknown) => this.deps.log.warn({ err }, 'publishing a session event failed'));
  }

  /** Ends every listen stream with the closing result and waits (up to timeoutMs) for them to let go upstream. */
  async close(timeoutMs = 5000): Promise<void> {
    this.closing = true;
    for (const l of [...this.open]) l.end('drain');
    const waited = Promise.allSettled([...this.running]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([waited, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    const left = this.standing.close();
    await Promise.race([left, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    this.stopTicker();
    await (await this.releases)?.().catch(() => undefined);
  }

  private async serve(ex: ListenExchange): Promise<void> {
    if (this.closing) throw causewayError('draining');
    const { request } = ex;
    const read = readFilter(request.params, this.limits.maxUrisPerListen);
    if (!read.ok) throw causewayError('invalid_params', read.message);
    if (read.taskIds && !declaresTasks(request.meta.clientCapabilities)) {
      throw causewayError('missing_client_capability', 'taskIds need the tasks extension', TASKS_REQUIRED);
    }
    const release = this.reserve(ex.principal);
    try {
      await this.stream(ex, read.filter);
    } finally {
      release();
    }
  }

  private async stream(ex: ListenExchange, requested: ListenFilter): Promise<void> {
    const id = ex.request.id;
    let acknowledged = false;
    const early: JsonRpcNotification[] = [];
    const stream = new SseStream(ex.res);
    let finish!: (why: Ending) => void;
    const ended = new Promise<Ending>((resolve) => (finish = resolve));
    const deliver = (n: JsonRpcNotification) => {
      ex.span?.addEvent(n.method);
      if (acknowledged) stream.send(forStream(n, id));
      else early.push(n);
    };

    const joined: Array<{ channel: SessionChannel; member: ChannelMember }> = [];
    const remotes: Array<{ close(): void }> = [];
    let hearTasks: (() => Promise<void>) | undefined;
    try {
      const taskIds = requested.taskIds;
      if (taskIds) {
        hearTasks = await this.deps.bus.subscribe(taskEventsKey(ex.principal), (n) => {
          if (isObject(n.params) && taskIds.includes(n.params.taskId as string)) deliver(n);
        });
      }
      const honoured: ListenFilter[] = [];
      for (const part of ex.parts) {
        const uris = part.uris;
        const asked =
          uris === undefined || requested.resourceSubscriptions === undefined
            ? requested
            : { ...requested, resourceSubscriptions: requested.resourceSubscriptions.filter((u) => uris.includes(u)) };
        if (part.remote) {
          const { taskIds: _tasks, ...own } = asked;
          if (isEmpty(own)) continue;
          const opened = await part.remote.open(own, deliver, () => finish('lost'));
          remotes.push(opened);
          honoured.push(opened.honoured);
          continue;
        }
        const session = await this.deps.pool.acquire(part.key);
        let filter = honour(asked, session.record.initializeResult.capabilities);
        if (!isEmpty(filter)) {
          const member: ChannelMember = {
            deliver: (n) => {
              if (admits(filter, n)) deliver(n);
            },
            lost: () => finish('lost'),
          };
          const channel = this.channelFor(part.key, session);
          joined.push({ channel, member });
          const held = await channel.attach(member, filter.resourceSubscriptions ?? []);
          if (filter.resourceSubscriptions !== undefined) filter = { ...filter, resourceSubscriptions: held };
        }
        honoured.push(filter);
      }
      const filter = { ...unionOf(honoured), ...(taskIds ? { taskIds } : {}) };
      if (ex.signal.aborted) return;
      if (this.closing) throw causewayError('draining');

      // [SUBS] The acknowledgment is the first message carrying this subscription id.
      stream.send(acknowledgment(filter, id));
      acknowledged = true;
      for (const n of early.splice(0)) stream.send(forStream(n, id));

      const onAbort = () => finish('client');
      ex.signal.addEventListener('abort', onAbort, { once: true });
      if (ex.signal.aborted) finish('client');
      const entry: OpenListen = { stream, end: finish };
      this.open.add(entry);
      this.startTicker();
      ex.log.debug({ subscription: describe(filter) }, 'listen stream open');
      let why: Ending;
      try {
        why = await ended;
      } finally {
        this.open.delete(entry);
        ex.signal.removeEventListener('abort', onAbort);
      }
      ex.span?.setAttribute('causeway.listen.ended_by', why);
      if (why === 'drain') stream.end(closingResult(id));
      // A lost upstream ends the stream without the result: the client treats it as a drop and re-listens.
      else if (why === 'lost') stream.end();
      ex.log.debug({ why }, 'listen stream ended');
    } finally {
      await hearTasks?.();
      for (const r of remotes) r.close();
      for (const j of joined) await j.channel.detach(j.member);
      if (this.open.size === 0 && this.standing.size === 0) this.stopTicker();
    }
  }

  private channelFor(key: SessionKey, session: PooledSession): SessionChannel {
    let c = this.channels.get(key.id);
    if (!c) {
      this.hearReleases();
      c = new SessionChannel(key, session, { ...this.deps, client: this.deps.clientOf(key.upstream) }, (ended) => {
        if (this.channels.get(ended.key.id) === ended) this.channels.delete(ended.key.id);
      });
      this.channels.set(key.id, c);
    }
    return c;
  }

  /** Across replicas, once: a holder elsewhere that lets a stream go says so under one key for all sessions. */
  private hearReleases(): void {
    if (this.deps.coordinator?.watch === undefined || this.releases !== undefined) return;
    this.releases = this.deps.bus
      .subscribe(
        RELEASED_KEY,
        (n) => {
          const key = isObject(n.params) ? n.params.key : undefined;
          if (n.method === HOLDER_RELEASED && typeof key === 'string') this.channels.get(key)?.released();
        },
        // A hand-over may have been missed: each channel waiting on a stream asks for it again.
        () => {
          for (const c of this.channels.values()) c.released();
        },
      )
      .catch((err: unknown) => {
        this.deps.log.warn(
          { err },
          'cannot hear GET-stream hand-overs from other replicas; ' +
            'streams are taken over when their replica lapses',
        );
        return undefined;
      });
  }

  /** Takes a listener slot or throws overloaded; the function returned gives it back. */
  private reserve(principal: string): () => void {
    const mine = this.perPrincipal.get(principal) ?? 0;
    if (this.count >= this.limits.maxListeners)
      throw causewayError('overloaded', 'Too many subscriptions/listen streams open');
    if (mine >= this.limits.maxPerPrincipal)
      throw causewayError('overloaded', 'Too many subscriptions/listen streams open for this principal');
    this.count += 1;
    this.perPrincipal.set(principal, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.count -= 1;
      const left = (this.perPrincipal.get(principal) ?? 1) - 1;
      if (left > 0) this.perPrincipal.set(principal, left);
      else this.perPrincipal.delete(principal);
    };
  }

  /**
   * One timer for every stream: keep-alive comments (unless keepAliveMs is 0), and each channel's
   * housekeeping (session kept in use, GET-stream lease renewed or taken over, counts restated).
   */
  private startTicker(): void {
    if (this.ticker) return;
    const comments = this.limits.keepAliveMs > 0;
    this.ticker = setInterval(() => {
      if (comments) for (const l of this.open) l.stream.comment();
      this.standing.sweep();
      for (const c of this.channels.values()) c.touch();
    }, listenTickMs(this.limits.keepAliveMs));
    this.ticker.unref();
  }

  private stopTicker(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
  }
}

/** Kinds only, for logs: never the URIs. */
function describe(f: ListenFilter): string[] {
  const kinds = (['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const).filter((k) => f[k]);
  return f.resourceSubscriptions ? [...kinds, `resources:${f.resourceSubscriptions.length}`] : kinds;
}

/** Where a principal's task notifications travel: not a session key (those have three parts). */
function taskEventsKey(principal: string): string {
  return `tasks|${principal}`;
}
