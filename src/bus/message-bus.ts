// Messages between replicas: publish to a channel, subscribe to one. LocalBus serves a single
// process (and tests that run several apps in one); RedisBus carries messages between
// processes over Redis pub/sub, on a connection of its own as pub/sub requires.
//
// Redis pub/sub keeps nothing: a message published while Redis fails over, or while a
// subscriber's connection is being made again, is gone. RedisBus makes up for both sides:
// - a publish Redis does not take (no primary, connection down) is held, in order, and sent once
//   Redis takes it again, for up to TIMINGS.holdMs; its promise settles then (a Redis away for longer
//   than that is an outage, not a failover: publishes fail at once until it is back);
// - a subscription is made whenever the subscriber connection is (re)made, and one that was down
//   tells its subscriber so (`onGap`), which re-reads what it may have missed; a subscription
//   Redis cannot take at start-up is made once it can (subscribe() waits; nothing stays off).
// A held message whose first PUBLISH timed out may arrive twice: receivers of requests dedupe.

import { EventEmitter } from 'node:events';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { ioredis } from './ioredis.js';

export interface MessageBus {
  /**
   * Resolves with how many subscribers heard it, when the bus can tell (a Redis Cluster cannot: another node's are not
   * counted).
   */
  publish(channel: string, message: string): Promise<number | undefined>;
  /**
   * Resolves once subscribed (waiting for Redis if it is away); the returned function unsubscribes.
   * `onGap`: the subscription was down for a while (a reconnect, a failover) and is made again;
   * messages published meanwhile may have been missed.
   */
  subscribe(channel: string, onMessage: (message: string) => void, onGap?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** A message between replicas, read as the sender's shape (both sides are Causeway); undefined when it is not JSON. */
export function readMessage<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

export class LocalBus implements MessageBus {
  private readonly handlers = new Map<string, Set<(m: string) => void>>();

  async publish(channel: string, message: string): Promise<number> {
    const handlers = this.handlers.get(channel) ?? new Set();
    for (const h of handlers) queueMicrotask(() => h(message));
    return handlers.size;
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(onMessage);
    return async () => {
      set.delete(onMessage);
      if (set.size === 0) this.handlers.delete(channel);
    };
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }
}

/** How a RedisBus holds what Redis does not take, and tries again; a bus may be given others (tests shorten them). */
const TIMINGS = {
  /**
   * How long a message Redis did not take is held for another try (longer than a Sentinel or Cluster failover takes).
   */
  holdMs: 60_000,
  /** Most messages held at once; beyond it a publish fails at once. */
  maxHeld: 10_000,
  /** Held messages are tried again this often (and at once when the connection is ready again). */
  retryMs: 100,
  /** A subscription that failed on a live connection is tried again after this long. */
  resubscribeMs: 500,
};

interface Held {
  channel: string;
  message: string;
  until: number;
  resolve(heard: number | undefined): void;
  reject(err: Error): void;
}

interface Subscription {
  handlers: Set<(m: string) => void>;
  gaps: Set<() => void>;
  /** Subscribed on the current connection. */
  made: boolean;
  /** It was made once, and its connection went down since: the next making is a gap. */
  missed: boolean;
  done: Promise<void>;
  resolve(): void;
  reject(err: Error): void;
}

/** The subscriber connection: made again (and its subscriptions lost) whenever it drops. Emits ready, down, message. */
interface SubscriberLink extends EventEmitter {
  readonly ready: boolean;
  subscribe(channels: string[]): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  disconnect(): void;
}

export class RedisBus implements MessageBus {
  private readonly link: SubscriberLink;
  private readonly subs = new Map<string, Subscription>();
  private readonly held: Held[] = [];
  private flushing = false;
  /** When Redis first refused a publish, until it takes one again. */
  private downSince: number | undefined;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly timings: typeof TIMINGS;

  /** `timings`: any of TIMINGS set otherwise (tests shorten holdMs). */
  constructor(
    private readonly pub: Redis | Cluster,
    timings: Partial<typeof TIMINGS> = {},
  ) {
    this.timings = { ...TIMINGS, ...timings };
    // A failed publish is held or rejects its own promise; the connection's errors need no other listener.
    pub.on('error', () => undefined);
    pub.on('ready', () => void this.flush());
    this.link = pub instanceof ioredis().Cluster ? new ClusterLink(pub) : new NodeLink(pub);
    this.link.on('message', (channel: string, message: string) => {
      for (const h of this.subs.get(channel)?.handlers ?? []) h(message);
    });
    this.link.on('down', () => {
      for (const s of this.subs.values()) {
        if (s.made) s.missed = true;
        s.made = false;
      }
    });
    this.link.on('ready', () => void this.make([...this.subs.keys()]));
  }

  async publish(channel: string, message: string): Promise<number | undefined> {
    if (this.closed) throw new Error('the message bus is closed');
    // Behind held messages: sent after them, in order.
    if (this.held.length === 0) {
      try {
        const heard = this.heard(await this.send(channel, message));
        this.downSince = undefined;
        return heard;
      } catch (err) {
        // Redis did not take it (no primary, no connection): held for another try below, unless
        // it has been away longer than a failover takes; then a publish fails at once, as the
        // callers' own fallbacks expect, until Redis takes one again.
        this.downSince ??= Date.now();
        if (Date.now() - this.downSince > this.timings.holdMs) throw err;
      }
    }
    if (this.held.length >= this.timings.maxHeld) throw new Error('too many messages held for Redis to come back');
    return new Promise((resolve, reject) => {
      this.held.push({ channel, message, until: Date.now() + this.timings.holdMs, resolve, reject });
      this.later();
    });
  }

  /** Held messages in order, while Redis takes them; the rest wait for the next try. */
  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.held.length > 0 && !this.closed) {
        const m = this.held[0]!;
        if (Date.now() > m.until) {
          this.held.shift();
          m.reject(new Error(`Redis did not take a message for ${this.timings.holdMs} ms`));
          continue;
        }
        let heard: number;
        try {
          heard = await this.send(m.channel, m.message);
        } catch {
          break;
        }
        this.held.shift();
        this.downSince = undefined;
        m.resolve(this.heard(heard));
      }
    } finally {
      this.flushing = false;
      if (this.held.length > 0) this.later();
    }
  }

  /**
   * PUBLISH. On a Cluster a channel's messages all go through one primary (chosen by the channel's
   * name among those the client knows), so they reach each subscriber in the order sent: sent
   * through random nodes, as ioredis sends a command without a key, they overtake each other.
   */
  private send(channel: string, message: string): Promise<number> {
    if (this.pub instanceof ioredis().Cluster) {
      const primaries = this.pub.nodes('master');
      if (primaries.length > 0) return primaries[hashOf(channel) % primaries.length]!.publish(channel, message);
    }
    return this.pub.publish(channel, message);
  }

  private later(): void {
    if (this.retry || this.closed) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.flush();
    }, this.timings.retryMs);
  }

  private heard(n: number): number | undefined {
    return this.pub instanceof ioredis().Cluster ? undefined : n;
  }

  async subscribe(
    channel: string,
    onMessage: (message: string) => void,
    onGap?: () => void,
  ): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('the message bus is closed');
    let s = this.subs.get(channel);
    if (!s) {
      let resolve!: () => void;
      let reject!: (err: Error) => void;
      const done = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
      done.catch(() => undefined);
      s = { handlers: new Set(), gaps: new Set(), made: false, missed: false, done, resolve, reject };
      this.subs.set(channel, s);
      void this.make([channel]);
    }
    const mine = s;
    mine.handlers.add(onMessage);
    if (onGap) mine.gaps.add(onGap);
    await mine.done;
    return async () => {
      mine.handlers.delete(onMessage);
      if (onGap) mine.gaps.delete(onGap);
      if (mine.handlers.size > 0 || this.subs.get(channel) !== mine) return;
      this.subs.delete(channel);
      if (this.link.ready) await this.link.unsubscribe(channel).catch(() => undefined);
    };
  }

  /**
   * SUBSCRIBEs `channels` on the connection if it is ready (else its next ready does); tells those that had been down.
   */
  private async make(channels: string[]): Promise<void> {
    const wanted = channels.filter((c) => this.subs.has(c));
    if (wanted.length === 0 || !this.link.ready || this.closed) return;
    try {
      await this.link.subscribe(wanted);
    } catch {
      // The connection dropped (its next ready makes them) or the command failed: try again.
      setTimeout(
        () => void this.make(wanted.filter((c) => this.subs.get(c)?.made === false)),
        this.timings.resubscribeMs,
      ).unref();
      return;
    }
    if (!this.link.ready) return;
    for (const c of wanted) {
      const s = this.subs.get(c);
      if (!s || s.made) continue;
      s.made = true;
      s.resolve();
      if (!s.missed) continue;
      s.missed = false;
      for (const gap of [...s.gaps]) {
        try {
          gap();
        } catch {
          // A subscriber's own failure is its own.
        }
      }
    }
  }

  /** Closes both connections: the bus owns the client it was given. Held messages are dropped. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    for (const m of this.held.splice(0)) m.reject(new Error('the message bus is closed'));
    for (const s of this.subs.values()) s.reject(new Error('the message bus is closed'));
    this.subs.clear();
    this.link.disconnect();
    this.pub.disconnect();
  }
}

function hashOf(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
  return h;
}

/**
 * A single node or a Sentinel-found primary: its own duplicate, which ioredis (or Sentinel) connects again by itself.
 */
class NodeLink extends EventEmitter implements SubscriberLink {
  private readonly conn: Redis;

  constructor(pub: Redis) {
    super();
    // Subscriptions are made again by the bus (so it knows when), not by ioredis.
    this.conn = pub.duplicate({ enableOfflineQueue: false, autoResubscribe: false });
    this.conn.on('error', () => undefined);
    this.conn.on('message', (c: string, m: string) => this.emit('message', c, m));
    this.conn.on('close', () => this.emit('down'));
    this.conn.on('ready', () => this.emit('ready'));
  }

  get ready(): boolean {
    return this.conn.status === 'ready';
  }

  subscribe(channels: string[]): Promise<unknown> {
    return this.conn.subscribe(...channels);
  }

  unsubscribe(channel: string): Promise<unknown> {
    return this.conn.unsubscribe(channel);
  }

  disconnect(): void {
    this.conn.disconnect();
  }
}

const CLUSTER_RETRY_CAP_MS = 1_000;

/**
 * A Redis Cluster: one plain connection to any node (Cluster broadcasts PUBLISH to every node),
 * made to the next known node when it drops, and ready only once that node says the cluster is
 * ok. ioredis's own cluster subscriber does the same without telling when its subscriptions are
 * made again, so a gap could not be seen.
 */
class ClusterLink extends EventEmitter implements SubscriberLink {
  private conn: Redis | undefined;
  private next = 0;
  private failures = 0;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private isReady = false;

  constructor(private readonly cluster: Cluster) {
    super();
    this.connect();
  }

  get ready(): boolean {
    return this.isReady && this.conn?.status === 'ready';
  }

  /** Nodes the cluster client knows now, else its seeds. */
  private nodes(): Array<{ host: string; port: number }> {
    const known = this.cluster
      .nodes('all')
      .map((n) => ({ host: n.options.host ?? '127.0.0.1', port: n.options.port ?? 6379 }));
    if (known.length > 0) return known;
    const seeds =
      (this.cluster as unknown as { startupNodes: Array<{ host?: string; port?: number } | string | number> })
        .startupNodes ?? [];
    return seeds.map((s) =>
      typeof s === 'object'
        ? { host: s.host ?? '127.0.0.1', port: s.port ?? 6379 }
        : { host: '127.0.0.1', port: Number(s) },
    );
  }

  private connect(): void {
    if (this.closed) return;
    const nodes = this.nodes();
    const node = nodes[this.next++ % Math.max(1, nodes.length)];
    if (!node) return this.again();
    const options: RedisOptions = {
      ...(this.cluster.options.redisOptions as RedisOptions | undefined),
      host: node.host,
      port: node.port,
      enableOfflineQueue: false,
      autoResubscribe: false,
      // Not connected again to the same node: the next one is tried.
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    };
    const conn = new (ioredis().Redis)(options);
    this.conn = conn;
    conn.on('error', () => undefined);
    conn.on('message', (c: string, m: string) => this.emit('message', c, m));
    conn.once('ready', () => {
      // A node cut off from the cluster's majority hears no publishes: only an ok one will do.
      conn.call('CLUSTER', 'INFO').then(
        (info) => {
          if (this.conn !== conn) return;
          if (!/cluster_state:ok/.test(String(info))) return conn.disconnect();
          this.failures = 0;
          this.isReady = true;
          this.emit('ready');
        },
        () => conn.disconnect(),
      );
    });
    conn.once('end', () => {
      if (this.conn !== conn) return;
      this.conn = undefined;
      this.isReady = false;
      this.emit('down');
      this.failures++;
      this.again();
    });
  }

  private again(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => this.connect(), Math.min(this.failures * 100, CLUSTER_RETRY_CAP_MS));
    this.timer.unref();
  }

  subscribe(channels: string[]): Promise<unknown> {
    if (!this.conn) return Promise.reject(new Error('no cluster node to subscribe on'));
    return this.conn.subscribe(...channels);
  }

  unsubscribe(channel: string): Promise<unknown> {
    if (!this.conn) return Promise.resolve();
    return this.conn.unsubscribe(channel);
  }

  disconnect(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.conn?.disconnect();
  }
}
