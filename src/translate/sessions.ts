// Legacy sessions Causeway itself keeps for legacy clients of a modern upstream. The
// Mcp-Session-Id is sealed (AES-GCM under the state keys): it carries what never changes in a
// session (the upstream, the owner's principal hash, the negotiated version, the client's info
// and declared capabilities) and the session's own id, so any replica opens it with no lookup,
// and one sealed for another principal or upstream opens as no session at all. What a session
// changes as it goes (its log level, its resource subscriptions) and whether it still lives are
// kept in the store under the session's id, with the store's idle TTL: one read per request.

import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { isObject, type JsonObject } from '../jsonrpc.js';
import type { Sealer } from '../upstream/index.js';
import type { ClientFacts } from './wire.js';

const PURPOSE = 'legacy-face-session';

/** What a session's id carries. */
export interface SealedSession extends ClientFacts {
  /** The session's own id: its key in the store. */
  id: string;
  version: string;
}

/** What a session changes as it goes. */
export interface LiveFacts {
  logLevel?: string;
  /** URIs of its resources/subscribe, in order. */
  uris: string[];
}

export interface FactsStore {
  /** The session's facts; undefined when it was ended or has expired. */
  get(id: string): Promise<LiveFacts | undefined>;
  put(id: string, facts: LiveFacts): Promise<void>;
  end(id: string): Promise<void>;
  close(): void;
}

/** The parts of an Implementation kept in the id: enough to name the client upstream. */
function clientInfoOf(info: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const k of ['name', 'version', 'title'] as const) if (typeof info[k] === 'string') out[k] = (info[k] as string).slice(0, 256);
  return out;
}

export class SessionSeal {
  constructor(
    private readonly sealer: Sealer,
    private readonly upstream: string,
  ) {}

  mint(principal: string, version: string, clientInfo: JsonObject, capabilities: JsonObject): { clientId: string; session: SealedSession } {
    const session: SealedSession = { id: randomBytes(16).toString('base64url'), version, clientInfo: clientInfoOf(clientInfo), capabilities };
    const clientId = this.sealer.sealFor(PURPOSE, { u: this.upstream, p: principal, s: session });
    return { clientId, session };
  }

  /** The session a client's Mcp-Session-Id names, when it was minted here for this principal. */
  open(clientId: string, principal: string): SealedSession | undefined {
    if (clientId.length > 8192 || !/^[\x21-\x7e]+$/.test(clientId)) return undefined;
    let v: unknown;
    try {
      v = this.sealer.openFor(PURPOSE, clientId);
    } catch {
      return undefined;
    }
    if (!isObject(v) || v.u !== this.upstream || v.p !== principal || !isObject(v.s)) return undefined;
    const s = v.s;
    if (typeof s.id !== 'string' || typeof s.version !== 'string' || !isObject(s.clientInfo) || !isObject(s.capabilities)) return undefined;
    return { id: s.id, version: s.version, clientInfo: s.clientInfo, capabilities: s.capabilities };
  }
}

export class MemoryFacts implements FactsStore {
  private readonly facts = new Map<string, { facts: LiveFacts; expires: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly ttlMs: number) {
    this.sweeper = setInterval(() => {
      const now = Date.now();
      for (const [id, f] of this.facts) if (f.expires <= now) this.facts.delete(id);
    }, Math.max(1_000, Math.min(ttlMs / 4, 30_000)));
    this.sweeper.unref();
  }

  async get(id: string): Promise<LiveFacts | undefined> {
    const f = this.facts.get(id);
    if (f === undefined || f.expires <= Date.now()) return undefined;
    f.expires = Date.now() + this.ttlMs;
    return f.facts;
  }

  async put(id: string, facts: LiveFacts): Promise<void> {
    this.facts.set(id, { facts, expires: Date.now() + this.ttlMs });
  }

  async end(id: string): Promise<void> {
    this.facts.delete(id);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

/**
 * The facts in Redis, one string key per session with the idle TTL. A read renews the TTL at
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

  async get(id: string): Promise<LiveFacts | undefined> {
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
    const v: unknown = JSON.parse(text);
    if (!isObject(v) || !Array.isArray(v.uris)) return undefined;
    return { uris: v.uris.filter((u): u is string => typeof u === 'string'), ...(typeof v.logLevel === 'string' ? { logLevel: v.logLevel } : {}) };
  }

  async put(id: string, facts: LiveFacts): Promise<void> {
    await this.redis.set(this.key(id), JSON.stringify(facts), 'PX', this.ttlMs);
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
