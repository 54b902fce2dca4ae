// The public entries in Redis too (cache.store=redis), so that a replica new to an answer, a new
// replica included, serves it without asking the upstream. One hash per upstream method
// (`<prefix>cache:{<upstream>}:<method>`), a field per set of parameters: a list change drops the
// hash in one command. Each field holds its own expiry, checked on read; the hash expires with
// its longest-lived field. Private entries never leave the replica that read them.

import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { isObject } from '../jsonrpc.js';
import type { Entry } from './memory-tier.js';

export interface SharedEntry {
  rest: string;
  ttlMs: number;
  expiresAt: number;
  uri: string | undefined;
}

export class RedisTier {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly prefix: string,
  ) {}

  async get(upstream: string, method: string, base: string, now: number): Promise<SharedEntry | undefined> {
    const text = await this.redis.hget(this.hashKey(upstream, method), field(base));
    if (text === null) return undefined;
    const e = read(text);
    return e !== undefined && e.expiresAt > now ? e : undefined;
  }

  async put(e: Entry, base: string): Promise<void> {
    const value: SharedEntry = { rest: e.rest, ttlMs: e.ttlMs, expiresAt: e.expiresAt, uri: e.uri };
    const key = this.hashKey(e.upstream, e.method);
    const ttl = Math.max(1, e.expiresAt - Date.now());
    // The hash lives as long as its longest-lived field: GT never shortens it.
    await this.redis
      .multi()
      .hset(key, field(base), JSON.stringify(value))
      .pexpire(key, ttl, 'NX')
      .pexpire(key, ttl, 'GT')
      .exec();
  }

  /** Drops an upstream's entries of `method`: all of them, or only those of `uri`. */
  async drop(upstream: string, method: string, uri?: string): Promise<void> {
    const key = this.hashKey(upstream, method);
    if (uri === undefined) {
      await this.redis.del(key);
      return;
    }
    const all = await this.redis.hgetall(key);
    const gone = Object.entries(all).flatMap(([f, text]) => (read(text)?.uri === uri ? [f] : []));
    if (gone.length > 0) await this.redis.hdel(key, ...gone);
  }

  private hashKey(upstream: string, method: string): string {
    return `${this.prefix}cache:{${upstream}}:${method}`;
  }
}

/** A field name of bounded length whatever the parameters. */
function field(base: string): string {
  return createHash('sha256').update(base).digest('base64url').slice(0, 27);
}

function read(text: string): SharedEntry | undefined {
  try {
    const v: unknown = JSON.parse(text);
    if (!isObject(v) || typeof v.rest !== 'string' || typeof v.ttlMs !== 'number' || typeof v.expiresAt !== 'number')
      return undefined;
    return { rest: v.rest, ttlMs: v.ttlMs, expiresAt: v.expiresAt, uri: typeof v.uri === 'string' ? v.uri : undefined };
  } catch {
    return undefined;
  }
}
