// The gateway cache [CACHE]: discover, list pages and resource reads kept at the gateway, served
// again without asking the upstream, and never to another authorization context than the one
// they were read for, unless the answer was public.
//
// - Looked up in memory first (sync), then, for an answer that may be public, in Redis
//   (cache.store=redis) so that any replica serves what one read.
// - Concurrent misses of one key make one upstream request: the others wait for it and are
//   served from what it kept (or ask themselves, when it kept nothing).
// - A change notification drops the matching entries here and, over the bus, on every replica
//   (each also drops the shared ones, after its own writes); a fill that started before a change
//   keeps nothing (each method's generation moved on).
// - Served with ttlMs as what is left of the entry's life, never more than the upstream (or the
//   policy) gave: a gateway that keeps an answer never lengthens how long a client may.

import type { MessageBus } from '../bus/index.js';
import { readMessage } from '../bus/index.js';
import { isObject, type JsonObject, type JsonRpcNotification, type RequestId } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import {
  CACHEABLE_METHODS,
  CHANGE_NOTIFICATIONS,
  groupOf,
  methodsChangedBy,
  privateKey,
  publicKey,
  type CacheQuery,
} from './keys.js';
import { MemoryTier, sizeOf, type Entry } from './memory-tier.js';
import type { CacheRecorder, CacheScope } from '../metrics/index.js';
import type { RedisTier } from './redis-tier.js';

export interface GatewayCacheOptions {
  maxBytes: number;
  replicaId: string;
  keyPrefix: string;
  /** Public entries shared through Redis (cache.store=redis). */
  shared?: RedisTier;
  recorder: CacheRecorder;
  log: Logger;
}

/** How an answer is kept. */
export interface Keep {
  scope: CacheScope;
  /** What clients are told they may keep it for (ttlMs). */
  ttlMs: number;
  /** How long the gateway keeps it: ttlMs, or longer where a change notification would drop it. */
  keepMs: number;
  /** The legacy session it was read on (private entries), dropped with that session. */
  session?: string;
}

/** A request to the upstream for a missed entry: `stamp` is the method's generation it started in. */
export interface Fill {
  stamp: number;
}

interface Invalidation {
  o: string;
  u: string;
  /** The change notification's method, or absent for a replaced session. */
  m?: string;
  uri?: string;
  /** A replaced legacy session's key id. */
  k?: string;
}

export class GatewayCache {
  private readonly memory: MemoryTier;
  private readonly flights = new Map<string, Promise<void>>();
  private readonly generations = new Map<string, number>();
  /**
   * The scope each upstream method's answers came with last: a private one (or one not to keep) skips the Redis lookup.
   */
  private readonly scopes = new Map<string, CacheScope>();
  private readonly channel: string;
  private epoch = 0;
  private off: (() => Promise<void>) | undefined;
  /** Carries invalidations to the other replicas (store.kind=redis), once started. */
  private bus: MessageBus | undefined;

  constructor(private readonly opts: GatewayCacheOptions) {
    this.memory = new MemoryTier(opts.maxBytes, (e, why) => opts.recorder.dropped(e.method, e.scope, why));
    this.channel = `${opts.keyPrefix}cache`;
  }

  /** Starts telling the other replicas of invalidations, over `bus`, and hearing theirs. */
  async start(bus: MessageBus | undefined): Promise<void> {
    if (bus === undefined || this.bus !== undefined) return;
    this.bus = bus;
    // A gap in the subscription (Redis failed over) may have lost invalidations: nothing kept here is trusted.
    this.off = await bus.subscribe(
      this.channel,
      (text) => this.heard(text),
      () => this.forgetAll(),
    );
  }

  async close(): Promise<void> {
    const off = this.off;
    this.off = undefined;
    await off?.().catch(() => undefined);
  }

  get bytes(): number {
    return this.memory.bytes;
  }

  /**
   * Serves `q`: from an entry (`hit`), else by asking the upstream once however many ask at the
   * same time (`miss`, which keeps what it may with store() and the fill it is given; the others
   * wait for it and are served from what it kept, or ask themselves when it kept nothing).
   * `scope`: the one the answer will have, when known before asking (a legacy upstream's policy);
   * else both are looked up. Each request counts once, as a hit or a miss.
   */
  async through<T>(
    q: CacheQuery,
    scope: CacheScope | undefined,
    hit: (e: Entry) => T,
    miss: (fill: Fill) => Promise<T>,
  ): Promise<T> {
    let found = this.findHere(q, scope) ?? (await this.findShared(q, scope));
    const key = privateKey(q);
    const running = found ? undefined : this.flights.get(key);
    if (running !== undefined) {
      await running;
      found = this.findHere(q, scope);
    }
    if (found) {
      this.opts.recorder.hit(q.method, found.scope);
      return hit(found);
    }
    this.opts.recorder.miss(q.method);
    let done!: () => void;
    const flight = new Promise<void>((resolve) => (done = resolve));
    this.flights.set(key, flight);
    try {
      return await miss({ stamp: this.generation(q.upstream, q.method) });
    } finally {
      if (this.flights.get(key) === flight) this.flights.delete(key);
      done();
    }
  }

  /** The entry that would serve `q`, if any, without counting a lookup (for what Causeway reads itself). */
  async peek(q: CacheQuery, scope: CacheScope | undefined): Promise<Entry | undefined> {
    return this.findHere(q, scope) ?? (await this.findShared(q, scope));
  }

  /** Keeps a complete result read for `q`, unless a change came since the fill began. */
  store(q: CacheQuery, fill: Fill, result: JsonObject, keep: Keep): void {
    if (keep.keepMs <= 0 || fill.stamp !== this.generation(q.upstream, q.method)) return;
    const { ttlMs: _ttl, ...rest } = result;
    void _ttl;
    const text = JSON.stringify(rest).slice(1);
    const key = keep.scope === 'public' ? publicKey(q) : privateKey(q);
    const e: Entry = {
      key,
      upstream: q.upstream,
      method: q.method,
      scope: keep.scope,
      uri: q.uri,
      // A private answer, and one kept past its ttlMs on the word of the session's stream, go with that session.
      session: keep.scope === 'private' || keep.keepMs > keep.ttlMs ? keep.session : undefined,
      rest: text,
      ttlMs: keep.ttlMs,
      expiresAt: Date.now() + keep.keepMs,
      bytes: sizeOf(key, text),
    };
    this.scopes.set(groupOf(q.upstream, q.method), keep.scope);
    if (!this.memory.set(e)) return;
    if (keep.scope === 'public' && this.opts.shared) {
      this.opts.shared
        .put(e, q.base)
        .catch((err: unknown) => this.opts.log.warn({ err }, 'cannot share a cache entry through Redis'));
    }
  }

  /** An answer to `q` that said not to keep it (a modern upstream's ttlMs 0, or no hints). */
  unkept(q: CacheQuery): void {
    this.scopes.set(groupOf(q.upstream, q.method), 'private');
  }

  /** A change notification from an upstream: its entries go, here and on every replica. */
  changed(upstream: string, n: JsonRpcNotification): void {
    const methods = methodsChangedBy(n.method);
    if (methods.length === 0) return;
    const uri =
      n.method === 'notifications/resources/updated' && isObject(n.params) && typeof n.params.uri === 'string'
        ? n.params.uri
        : undefined;
    this.drop(upstream, methods, uri);
    // The shared entries go first: a replica told of the change must not find the old answer in Redis.
    void this.dropShared(upstream, methods, uri).then(() =>
      this.tell({ o: this.opts.replicaId, u: upstream, m: n.method, ...(uri !== undefined ? { uri } : {}) }),
    );
  }

  /** A reload replaced or removed the upstream: whatever was kept of it goes, here and on every replica. */
  forget(upstream: string): void {
    for (const method of CHANGE_NOTIFICATIONS) this.changed(upstream, { jsonrpc: '2.0', method });
  }

  /**
   * A legacy session was replaced (its upstream forgot it, or its URL went): what was read on it
   * goes, and the upstream's discover; the shared entries of the upstream too, since Redis does
   * not know which session they were kept on the word of.
   */
  replaced(upstream: string, sessionKeyId: string): void {
    this.dropSession(upstream, sessionKeyId);
    void this.dropShared(upstream, [...CACHEABLE_METHODS], undefined).then(() =>
      this.tell({ o: this.opts.replicaId, u: upstream, k: sessionKeyId }),
    );
  }

  private async dropShared(upstream: string, methods: readonly string[], uri: string | undefined): Promise<void> {
    const shared = this.opts.shared;
    if (shared === undefined) return;
    await Promise.all(methods.map((m) => shared.drop(upstream, m, uri))).catch((err: unknown) =>
      this.opts.log.warn({ err }, 'cannot drop shared cache entries'),
    );
  }

  /**
   * The answer to request `id` from an entry; `see` filters the result for the request's grant, when it may hide
   * something.
   */
  answer(id: RequestId, e: Entry, see?: (result: JsonObject) => JsonObject): string {
    const ttlMs = Math.max(0, Math.min(e.ttlMs, e.expiresAt - Date.now()));
    if (see !== undefined) {
      const result = see({ ttlMs, ...(JSON.parse(`{${e.rest}`) as JsonObject) });
      return JSON.stringify({ jsonrpc: '2.0', id, result });
    }
    return (
      `{"jsonrpc":"2.0","id":${JSON.stringify(id)},` +
      `"result":{"ttlMs":${ttlMs}${e.rest === '}' ? '' : ','}${e.rest}}`
    );
  }

  /** The result an entry holds, as an object (for a face that rewrites it). */
  result(e: Entry): JsonObject {
    const ttlMs = Math.max(0, Math.min(e.ttlMs, e.expiresAt - Date.now()));
    return { ttlMs, ...(JSON.parse(`{${e.rest}`) as JsonObject) };
  }

  /** Bytes held, by method and scope, for the gauge. */
  bytesBy(): Array<[string, CacheScope, number]> {
    return this.memory.bytesBy();
  }

  private findHere(q: CacheQuery, scope: CacheScope | undefined): Entry | undefined {
    const now = Date.now();
    if (scope !== 'private') {
      const e = this.memory.get(publicKey(q), now);
      if (e) return e;
    }
    return scope === 'public' ? undefined : this.memory.get(privateKey(q), now);
  }

  private async findShared(q: CacheQuery, scope: CacheScope | undefined): Promise<Entry | undefined> {
    const shared = this.opts.shared;
    if (
      shared === undefined ||
      scope === 'private' ||
      (scope === undefined && this.scopes.get(groupOf(q.upstream, q.method)) === 'private')
    )
      return undefined;
    const stamp = this.generation(q.upstream, q.method);
    let found;
    try {
      found = await shared.get(q.upstream, q.method, q.base, Date.now());
    } catch (err) {
      this.opts.log.warn({ err }, 'cannot read shared cache entries');
      return undefined;
    }
    if (found === undefined) return undefined;
    const key = publicKey(q);
    const e: Entry = {
      key,
      upstream: q.upstream,
      method: q.method,
      scope: 'public',
      uri: found.uri,
      session: undefined,
      rest: found.rest,
      ttlMs: found.ttlMs,
      expiresAt: found.expiresAt,
      bytes: sizeOf(key, found.rest),
    };
    // Kept here too, unless a change came while Redis answered.
    if (stamp === this.generation(q.upstream, q.method)) this.memory.set(e);
    return e;
  }

  /** A method's generation: moved on by each change to it, and by a gap (epoch) for every method at once. */
  private generation(upstream: string, method: string): number {
    return this.epoch * 1_000_000 + (this.generations.get(groupOf(upstream, method)) ?? 0);
  }

  private forgetAll(): void {
    this.epoch += 1;
    this.memory.clear();
    this.opts.log.info(
      'the cache invalidations of other replicas may have ' + 'been missed (pub/sub gap): every kept answer dropped',
    );
  }

  private drop(upstream: string, methods: readonly string[], uri: string | undefined): void {
    for (const m of methods) {
      const group = groupOf(upstream, m);
      this.generations.set(group, (this.generations.get(group) ?? 0) + 1);
      this.memory.dropMethod(upstream, m, uri);
    }
  }

  private dropSession(upstream: string, sessionKeyId: string): void {
    const group = groupOf(upstream, 'server/discover');
    this.generations.set(group, (this.generations.get(group) ?? 0) + 1);
    this.memory.dropMethod(upstream, 'server/discover');
    this.memory.dropSession(sessionKeyId);
  }

  private tell(msg: Invalidation): void {
    this.bus
      ?.publish(this.channel, JSON.stringify(msg))
      .catch((err: unknown) => this.opts.log.warn({ err }, 'cannot tell the other replicas of a cache invalidation'));
  }

  private heard(text: string): void {
    const msg = readMessage<Invalidation>(text);
    if (!isObject(msg) || msg.o === this.opts.replicaId || typeof msg.u !== 'string') return;
    // Each replica drops the shared entries too: one it wrote from a fill that ended before it
    // heard of the change went to Redis ahead of this drop, on the same connection.
    if (typeof msg.k === 'string') {
      this.dropSession(msg.u, msg.k);
      void this.dropShared(msg.u, [...CACHEABLE_METHODS], undefined);
    } else if (typeof msg.m === 'string') {
      const methods = methodsChangedBy(msg.m);
      const uri = typeof msg.uri === 'string' ? msg.uri : undefined;
      this.drop(msg.u, methods, uri);
      void this.dropShared(msg.u, methods, uri);
    }
  }
}
