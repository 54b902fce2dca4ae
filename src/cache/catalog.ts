// One catalog of names per upstream, shared by the replicas: the tools, prompts and resource
// templates its lists named, learned by whichever replica read a list, kept in Redis and told to
// the others at once, so that a replica that never read a list names a tools/call in its metrics
// as the one that did. Bounded as each replica's own vocabulary is (metrics/names.ts): the
// catalog only offers names, the vocabulary decides what it keeps.

import type { Cluster, Redis } from 'ioredis';
import type { MessageBus } from '../bus/index.js';
import { readMessage } from '../bus/index.js';
import { isObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';

/** The lists whose items name something. */
export const NAMING_LISTS = ['tools/list', 'prompts/list', 'resources/templates/list'] as const;

/** Names offered per list at most: as many as a vocabulary keeps, and some. */
const MAX_ITEMS = 1000;
/** A catalog no replica added to for this long is forgotten. */
const CATALOG_TTL_S = 7 * 24 * 3600;

export interface CatalogOptions {
  redis: Redis | Cluster;
  bus: MessageBus;
  keyPrefix: string;
  replicaId: string;
  /** Hands names to an upstream's vocabulary; returns those it did not know. */
  offer(upstream: string, method: string, items: readonly string[]): readonly string[];
  log: Logger;
}

interface Learned {
  o: string;
  u: string;
  m: string;
  v: string[];
}

export class NameCatalog {
  private readonly channel: string;
  private off: (() => Promise<void>) | undefined;

  constructor(private readonly opts: CatalogOptions) {
    this.channel = `${opts.keyPrefix}catalog`;
  }

  /** Hears the other replicas, then reads what they learned before this one started. */
  async start(upstreams: readonly string[]): Promise<void> {
    // After a gap in the subscription, what was told meanwhile is read back from Redis.
    this.off ??= await this.opts.bus.subscribe(
      this.channel,
      (text) => this.heard(text),
      () =>
        void this.load(upstreams).catch((err: unknown) =>
          this.opts.log.warn({ err }, 'cannot read the names other replicas learned'),
        ),
    );
    await this.load(upstreams);
  }

  private async load(upstreams: readonly string[]): Promise<void> {
    await Promise.all(
      upstreams.flatMap((u) =>
        NAMING_LISTS.map(async (m) => {
          const items = await this.opts.redis.srandmember(this.key(u, m), MAX_ITEMS);
          if (items.length > 0) this.opts.offer(u, m, items);
        }),
      ),
    );
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

  /** Names this replica just learned from a list: kept, and told to the others. */
  learned(upstream: string, method: string, items: readonly string[]): void {
    if (items.length === 0) return;
    const v = items.slice(0, MAX_ITEMS);
    const key = this.key(upstream, method);
    this.opts.redis
      .multi()
      .sadd(key, ...v)
      .expire(key, CATALOG_TTL_S)
      .exec()
      .catch((err: unknown) => this.opts.log.warn({ err }, 'cannot keep learned names in the catalog'));
    const msg: Learned = { o: this.opts.replicaId, u: upstream, m: method, v };
    this.opts.bus
      .publish(this.channel, JSON.stringify(msg))
      .catch((err: unknown) => this.opts.log.warn({ err }, 'cannot tell the other replicas of learned names'));
  }

  private heard(text: string): void {
    const msg = readMessage<Learned>(text);
    if (
      !isObject(msg) ||
      msg.o === this.opts.replicaId ||
      typeof msg.u !== 'string' ||
      typeof msg.m !== 'string' ||
      !Array.isArray(msg.v)
    )
      return;
    this.opts.offer(msg.u, msg.m, msg.v.filter((x): x is string => typeof x === 'string').slice(0, MAX_ITEMS));
  }

  private key(upstream: string, method: string): string {
    return `${this.opts.keyPrefix}catalog:{${upstream}}:${method}`;
  }
}
