// Legacy sessions Causeway itself keeps for legacy clients of a modern upstream. The
// Mcp-Session-Id is 128 random bits; the session's record, in the store under it with the
// store's idle TTL, holds what the session is (the upstream, the owner's principal hash, the
// negotiated version, the client's info and declared capabilities) and what it changes as it
// goes (its log level, its resource subscriptions). Any replica serves it with one read per
// request; one opened by another principal, or for another upstream, reads as no session at all.

import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { isObject, type JsonObject } from '../jsonrpc.js';
import type { ClientFacts } from './wire.js';

/** A legacy session of the translated face. */
export interface SessionRecord extends ClientFacts {
  upstream: string;
  principal: string;
  version: string;
  logLevel?: string;
  /** URIs of its resources/subscribe, in order. */
  uris: string[];
}

export interface FactsStore {
  /** The session's record; undefined when it was ended or has expired. */
  get(id: string): Promise<SessionRecord | undefined>;
  put(id: string, record: SessionRecord): Promise<void>;
  end(id: string): Promise<void>;
  close(): void;
}

/** The parts of an Implementation kept: enough to name the client upstream. */
export function clientInfoOf(info: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const k of ['name', 'version', 'title'] as const) if (typeof info[k] === 'string') out[k] = (info[k] as string).slice(0, 256);
  return out;
}

/** A new session's id. */
export function newSessionId(): string {
  return randomBytes(16).toString('base64url');
}

/** The record the store gave back, checked field by field. */
function recordOf(v: unknown): SessionRecord | undefined {
  if (!isObject(v) || !Array.isArray(v.uris)) return undefined;
  const { upstream, principal, version, clientInfo, capabilities, logLevel } = v;
  if (typeof upstream !== 'string' || typeof principal !== 'string' || typeof version !== 'string' || !isObject(clientInfo) || !isObject(capabilities)) return undefined;
  const uris = v.uris.filter((u): u is string => typeof u === 'string');
  return { upstream, principal, version, clientInfo, capabilities, uris, ...(typeof logLevel === 'string' ? { logLevel } : {}) };
}

export class MemoryFacts implements FactsStore {
  private readonly facts = new Map<string, { record: SessionRecord; expires: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly ttlMs: number) {
    this.sweeper = setInterval(() => {
      const now = Date.now();
      for (const [id, f] of this.facts) if (f.expires <= now) this.facts.delete(id);
    }, Math.max(1_000, Math.min(ttlMs / 4, 30_000)));
    this.sweeper.unref();
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const f = this.facts.get(id);
    if (f === undefined || f.expires <= Date.now()) return undefined;
    f.expires = Date.now() + this.ttlMs;
    return f.record;
  }

  async put(id: string, record: SessionRecord): Promise<void> {
    this.facts.set(id, { record, expires: Date.now() + this.ttlMs });
  }

  async end(id: string): Promise<void> {
    this.facts.delete(id);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

/**
 * The records in Redis, one string key per session with the idle TTL. A read renews the TTL at
 * most every quarter TTL per replica, in the same round trip (GETEX), so a busy session costs
 * one command per request and an idle one nothing.
 */
export class RedisFacts implements FactsStore {
  private readonly renewed = new Map<string, number>();

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  private key(id: string): string {
    return `${this.prefix}lface:${id}`;
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const now = Date.now();
    const renew = (this.renewed.get(id) ?? 0) < now - this.ttlMs / 4;
    const text = renew ? await this.redis.getex(this.key(id), 'PX', this.ttlMs) : await this.redis.get(this.key(id));
    if (text === null) {
      this.renewed.delete(id);
      return undefined;
    }
    if (renew) {
      if (this.renewed.size > 100_000) this.renewed.clear();
      this.renewed.set(id, now);
    }
    try {
      return recordOf(JSON.parse(text));
    } catch {
      return undefined;
    }
  }

  async put(id: string, record: SessionRecord): Promise<void> {
    await this.redis.set(this.key(id), JSON.stringify(record), 'PX', this.ttlMs);
    this.renewed.set(id, Date.now());
  }

  async end(id: string): Promise<void> {
    this.renewed.delete(id);
    await this.redis.del(this.key(id));
  }

  close(): void {
    this.renewed.clear();
  }
}
