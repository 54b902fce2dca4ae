// Which upstreams ask outside a call: a server->client request (roots/list, sampling,
// elicitation) came on a session's standalone GET stream rather than on the stream of the call it
// belongs to. Under upstream.standingStream=auto a pooled session's GET stream is held with nobody
// listening only for such an upstream (and only where its client can be asked), so Causeway learns
// it from the streams it holds anyway: a listen's, an upstream's scout session's
// (subscriptions/standing.ts), and those of `always`. What one replica learns is kept in Redis and
// told to the others at once, so a replica that starts later holds the streams from its first
// session on. Learning is never undone: an upstream that asked once may ask again.

import type { Cluster, Redis } from 'ioredis';
import type { MessageBus } from '../../bus/index.js';
import { readMessage } from '../../bus/index.js';
import { isObject } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';

/** What is learned is kept this long after the last replica that learned it said so. */
const KEEP_S = 7 * 24 * 3600;

export interface SharedAskers {
  redis: Redis | Cluster;
  bus: MessageBus;
  keyPrefix: string;
  replicaId: string;
  log: Logger;
}

interface Told {
  o: string;
  u: string;
}

export class OutsideAskers {
  private readonly known = new Set<string>();
  private readonly hearers = new Set<(upstream: string) => void>();
  private off: (() => Promise<void>) | undefined;

  /** Without `shared`, this replica's own knowledge (memory store). */
  constructor(private readonly shared?: SharedAskers) {}

  /** Whether `upstream` was seen asking outside a call, here or on another replica. */
  has(upstream: string): boolean {
    return this.known.has(upstream);
  }

  /** Calls `hear` with each upstream learned from now on, wherever it was learned. */
  onLearned(hear: (upstream: string) => void): void {
    this.hearers.add(hear);
  }

  /** `upstream` asked outside a call on a stream this replica holds. */
  learn(upstream: string): void {
    if (!this.add(upstream) || this.shared === undefined) return;
    const { redis, bus, log, replicaId } = this.shared;
    redis
      .set(this.key(upstream), '1', 'EX', KEEP_S)
      .catch((err: unknown) => log.warn({ err }, 'cannot keep in Redis that an upstream asks outside a call'));
    const told: Told = { o: replicaId, u: upstream };
    bus
      .publish(this.channel(), JSON.stringify(told))
      .catch((err: unknown) =>
        log.warn({ err }, 'cannot tell the other replicas that an upstream asks outside a call'),
      );
  }

  /**
   * Hears the other replicas, then reads what they learned before this one started; again after the
   * bus lost Redis, writing back what this replica knows. Nothing waits for the store's connection
   * first, and a command sent while it is down is refused at once (no offline queue): a read wanted
   * then is made once the connection is up.
   */
  async start(upstreams: readonly string[]): Promise<void> {
    if (this.shared === undefined) return;
    const { bus, redis, log } = this.shared;
    let waiting = false;
    const reload = (): void => {
      if (redis.status !== 'ready') {
        if (!waiting) redis.once('ready', () => ((waiting = false), reload()));
        waiting = true;
        return;
      }
      void this.load(upstreams).catch((err: unknown) =>
        log.warn({ err }, 'cannot read which upstreams the other replicas saw asking outside a call'),
      );
    };
    this.off ??= await bus.subscribe(this.channel(), (text) => this.heard(text), reload);
    if (redis.status === 'ready') await this.load(upstreams);
    else reload();
  }

  /** An upstream a reload added: what the other replicas learned of it is read. */
  adopt(upstream: string): Promise<void> {
    return this.load([upstream]);
  }

  async close(): Promise<void> {
    const off = this.off;
    this.off = undefined;
    await off?.();
  }

  private async load(upstreams: readonly string[]): Promise<void> {
    const redis = this.shared?.redis;
    if (redis === undefined) return;
    await Promise.all(
      upstreams.map(async (u) => {
        // What this replica knows is written again: Redis may have come back empty.
        if (this.known.has(u)) await redis.set(this.key(u), '1', 'EX', KEEP_S);
        else if ((await redis.get(this.key(u))) !== null) this.add(u);
      }),
    );
  }

  private heard(text: string): void {
    const msg = readMessage<Told>(text);
    if (!isObject(msg) || msg.o === this.shared?.replicaId || typeof msg.u !== 'string') return;
    this.add(msg.u);
  }

  private add(upstream: string): boolean {
    if (this.known.has(upstream)) return false;
    this.known.add(upstream);
    for (const hear of this.hearers) hear(upstream);
    return true;
  }

  private channel(): string {
    return `${this.shared!.keyPrefix}asks-outside`;
  }

  private key(upstream: string): string {
    return `${this.shared!.keyPrefix}asks-outside:{${upstream}}`;
  }
}
