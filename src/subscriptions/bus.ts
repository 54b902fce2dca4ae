// The session event bus: every change notification an upstream session sends, on whichever
// stream it arrived, is published under that session's pool key and delivered to every
// subscriber of the key. InProcessSessionEventBus serves one replica; SharedSessionEventBus
// implements the same interface for many, over a MessageBus (RedisBus in production): the events
// of a session key travel on the pub/sub channel `<prefix>session-events:{<key>}`, subscribed
// while the key has a listen channel on this replica. An event reaches this replica's
// subscribers at once (it is not echoed back through pub/sub, so it arrives once and even while
// Redis is away) and the others' through the channel. Events that make a session's facts stale
// (SessionFacts.staledBy) are also sent on `<prefix>session-facts`, which every replica hears,
// listeners or not, so none keeps checking tool calls against stale tool annotations.

import type { MessageBus } from '../bus/index.js';
import { isObject, type JsonRpcNotification } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { SessionFacts } from '../pool/index.js';
import { factsChannel, sessionEventsChannel } from './redis-keys.js';

export type SessionEventHandler = (n: JsonRpcNotification) => void;

export interface SessionEventBus {
  /**
   * Delivers `n` to the key's subscribers (on every replica, for a shared bus). Never rejects for a missing subscriber.
   */
  publish(key: string, n: JsonRpcNotification): Promise<void>;
  /**
   * Resolves once events published for `key` reach `handler`; the function returned undoes it.
   * `onGap`: events for the key may have been missed (a shared bus's subscription was down for a while).
   */
  subscribe(key: string, handler: SessionEventHandler, onGap?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export class InProcessSessionEventBus implements SessionEventBus {
  private readonly handlers = new Map<string, Set<SessionEventHandler>>();

  constructor(private readonly log?: Logger) {}

  publish(key: string, n: JsonRpcNotification): Promise<void> {
    for (const h of [...(this.handlers.get(key) ?? [])]) {
      try {
        h(n);
      } catch (err) {
        this.log?.error({ err, method: n.method }, 'session event handler threw');
      }
    }
    return Promise.resolve();
  }

  subscribe(key: string, handler: SessionEventHandler): Promise<() => Promise<void>> {
    let set = this.handlers.get(key);
    if (!set) this.handlers.set(key, (set = new Set()));
    set.add(handler);
    return Promise.resolve(() => {
      const s = this.handlers.get(key);
      s?.delete(handler);
      if (s?.size === 0) this.handlers.delete(key);
      return Promise.resolve();
    });
  }

  /** Keys with at least one subscriber (for tests and diagnostics). */
  get keys(): number {
    return this.handlers.size;
  }

  close(): Promise<void> {
    this.handlers.clear();
    return Promise.resolve();
  }
}

/**
 * The bus with `tap` told of every event published on it, before it is delivered (the gateway cache hears changes so).
 */
export function tapped(bus: SessionEventBus, tap: (key: string, n: JsonRpcNotification) => void): SessionEventBus {
  return {
    publish(key, n) {
      tap(key, n);
      return bus.publish(key, n);
    },
    subscribe: (key, handler, onGap) => bus.subscribe(key, handler, onGap),
    close: () => bus.close(),
  };
}

export interface SharedBusOptions {
  keyPrefix: string;
  /** Tags what this replica publishes, so it does not hear it twice. */
  replicaId: string;
  /** Longest wait for a pub/sub subscription before carrying on without it (it completes later). */
  subscribeTimeoutMs: number;
  /**
   * Another replica saw `method`, a change that makes part of the key's session facts stale; every key's, when such
   * news may have been missed.
   */
  onStale?: (keyId: string | undefined, method: string) => void;
}

type Off = () => Promise<void>;

interface Entry {
  handlers: Set<SessionEventHandler>;
  gaps: Set<() => void>;
  /** The pub/sub subscription; undefined once it failed. */
  subscribed: Promise<Off | undefined>;
}

export class SharedSessionEventBus implements SessionEventBus {
  private readonly entries = new Map<string, Entry>();
  private facts: Promise<Off | undefined> | undefined;

  constructor(
    private readonly bus: MessageBus,
    private readonly opts: SharedBusOptions,
    private readonly log: Logger,
  ) {}

  /** Starts hearing other replicas' session facts invalidations; resolves once subscribed (or after the timeout). */
  async start(): Promise<void> {
    this.facts ??= this.bus
      .subscribe(
        factsChannel(this.opts.keyPrefix),
        (m) => this.onFacts(m),
        () => this.factsMissed(),
      )
      .catch((err: unknown) => {
        this.log.warn({ err }, 'cannot hear session facts invalidations from other replicas');
        return undefined;
      });
    await this.bounded(this.facts);
  }

  async publish(key: string, n: JsonRpcNotification): Promise<void> {
    this.dispatch(key, n);
    const sends = [
      this.bus.publish(sessionEventsChannel(this.opts.keyPrefix, key), JSON.stringify({ o: this.opts.replicaId, n })),
    ];
    if (SessionFacts.staledBy(n.method)) {
      sends.push(
        this.bus.publish(
          factsChannel(this.opts.keyPrefix),
          JSON.stringify({ o: this.opts.replicaId, k: key, m: n.method }),
        ),
      );
    }
    await Promise.all(sends);
  }

  async subscribe(key: string, handler: SessionEventHandler, onGap?: () => void): Promise<Off> {
    let entry = this.entries.get(key);
    if (!entry) {
      const gaps = new Set<() => void>();
      entry = {
        handlers: new Set(),
        gaps,
        subscribed: this.bus
          .subscribe(
            sessionEventsChannel(this.opts.keyPrefix, key),
            (m) => this.onEvent(key, m),
            () => this.missed(gaps),
          )
          .catch((err: unknown) => {
            this.log.warn({ err }, 'cannot hear session events from other replicas for a listened key');
            return undefined;
          }),
      };
      this.entries.set(key, entry);
    }
    const mine = entry;
    mine.handlers.add(handler);
    if (onGap) mine.gaps.add(onGap);
    await this.bounded(mine.subscribed);
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      mine.handlers.delete(handler);
      if (onGap) mine.gaps.delete(onGap);
      if (mine.handlers.size > 0 || this.entries.get(key) !== mine) return;
      this.entries.delete(key);
      // Not awaited: a subscription still waiting for Redis must not hold up the channel ending.
      void mine.subscribed.then((off) => off?.()).catch(() => undefined);
    };
  }

  /** Keys with a subscriber here (for tests and diagnostics). */
  get keys(): number {
    return this.entries.size;
  }

  async close(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    const facts = this.facts;
    this.facts = undefined;
    const offs = Promise.allSettled([
      ...entries.map(async (e) => (await e.subscribed)?.()),
      facts?.then((off) => off?.()),
    ]);
    await this.bounded(offs);
  }

  private dispatch(key: string, n: JsonRpcNotification): void {
    for (const h of [...(this.entries.get(key)?.handlers ?? [])]) {
      try {
        h(n);
      } catch (err) {
        this.log.error({ err, method: n.method }, 'session event handler threw');
      }
    }
  }

  private onEvent(key: string, text: string): void {
    const msg = parse(text);
    if (!msg || msg.o === this.opts.replicaId || !isObject(msg.n) || typeof msg.n.method !== 'string') return;
    this.dispatch(key, msg.n as unknown as JsonRpcNotification);
  }

  /** The key's channel was down for a while: its subscribers re-read what they may have missed. */
  private missed(gaps: Set<() => void>): void {
    for (const gap of [...gaps]) {
      try {
        gap();
      } catch (err) {
        this.log.error({ err }, 'session event gap handler threw');
      }
    }
  }

  /**
   * Invalidations may have been missed while the facts channel was down: every session's facts they stale are
   * forgotten.
   */
  private factsMissed(): void {
    for (const method of SessionFacts.staling()) {
      try {
        this.opts.onStale?.(undefined, method);
      } catch (err) {
        this.log.error({ err }, 'session facts invalidation threw');
      }
    }
  }

  private onFacts(text: string): void {
    const msg = parse(text);
    if (!msg || msg.o === this.opts.replicaId || typeof msg.k !== 'string' || typeof msg.m !== 'string') return;
    try {
      this.opts.onStale?.(msg.k, msg.m);
    } catch (err) {
      this.log.error({ err }, 'session facts invalidation threw');
    }
  }

  private async bounded(p: Promise<unknown>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([p, new Promise((r) => (timer = setTimeout(r, this.opts.subscribeTimeoutMs)))]);
    clearTimeout(timer);
  }
}

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
