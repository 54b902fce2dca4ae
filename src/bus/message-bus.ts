// Messages between replicas: publish to a channel, subscribe to one. LocalBus serves a single
// process (and tests that run several apps in one); RedisBus carries messages between
// processes over Redis pub/sub, on a connection of its own as pub/sub requires.

import { Cluster, type Redis } from 'ioredis';

export interface MessageBus {
  /** Resolves with how many subscribers heard it, when the bus can tell (a Redis Cluster cannot: another node's are not counted). */
  publish(channel: string, message: string): Promise<number | undefined>;
  /** Resolves once subscribed; the returned function unsubscribes. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>>;
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

export class RedisBus implements MessageBus {
  private readonly sub: Redis | Cluster;
  private readonly handlers = new Map<string, Set<(m: string) => void>>();

  constructor(private readonly pub: Redis | Cluster) {
    // A failed publish rejects its own promise; the connection's errors need no other listener.
    pub.on('error', () => undefined);
    // Subscriptions are re-sent by ioredis after a reconnect; they may wait for the connection.
    // Cluster.duplicate takes its startup nodes first: options given alone would be ignored, and
    // a SUBSCRIBE sent before the cluster is ready would fail instead of waiting.
    this.sub =
      pub instanceof Cluster
        ? pub.duplicate([], { enableOfflineQueue: true })
        : pub.duplicate({ enableOfflineQueue: true });
    this.sub.on('error', () => undefined);
    this.sub.on('message', (channel: string, message: string) => {
      for (const h of this.handlers.get(channel) ?? []) h(message);
    });
  }

  async publish(channel: string, message: string): Promise<number | undefined> {
    const heard = await this.pub.publish(channel, message);
    return this.pub instanceof Cluster ? undefined : heard;
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    if (!set) {
      this.handlers.set(channel, (set = new Set()));
      await this.sub.subscribe(channel);
    }
    set.add(onMessage);
    return async () => {
      set.delete(onMessage);
      if (set.size === 0) {
        this.handlers.delete(channel);
        await this.sub.unsubscribe(channel).catch(() => undefined);
      }
    };
  }

  /** Closes both connections: the bus owns the client it was given. */
  async close(): Promise<void> {
    this.handlers.clear();
    this.sub.disconnect();
    this.pub.disconnect();
  }
}
