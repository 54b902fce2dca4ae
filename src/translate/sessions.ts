// Legacy sessions Causeway itself keeps for legacy clients of a modern upstream. The
// Mcp-Session-Id is 128 random bits; the session's record, in the store under it with the
// store's idle TTL, holds what the session is (the upstream, the owner's principal hash, the
// negotiated version, the client's info and declared capabilities, whether the upstream runs
// tasks) and what it changes as it goes (its log level, its resource subscriptions, the tasks
// created through it). Any replica serves it with one read per request; one opened by another
// principal, or for another upstream, reads as no session at all. A change that must not lose
// another replica's (a task added) is made with `update`: in Redis, written only over the record
// it was made from.

import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { causewayError } from '../errors.js';
import { isObject, type JsonObject } from '../jsonrpc.js';
import type { ClientFacts } from './wire.js';
import { BoundedMap } from '../bounded.js';

/** A legacy session of the translated face. */
export interface SessionRecord extends ClientFacts {
  upstream: string;
  principal: string;
  version: string;
  logLevel?: string;
  /** URIs of its resources/subscribe, in order. */
  uris: string[];
  /** The upstream declared the tasks extension at initialize: the legacy tasks are served over it. */
  runsTasks?: boolean;
  /** Ids of the tasks created through this session, oldest first: its tasks/list, and the tasks it may touch. */
  tasks?: string[];
}

/** A session as a request sees it: its id and the record read for this request. */
export interface Session {
  id: string;
  record: SessionRecord;
}

export interface FactsStore {
  /** The session's record; undefined when it was ended or has expired. */
  get(id: string): Promise<SessionRecord | undefined>;
  put(id: string, record: SessionRecord): Promise<void>;
  /** The record as `change` makes it from its latest version, never over another's change; undefined when gone. */
  update(id: string, change: (record: SessionRecord) => SessionRecord): Promise<SessionRecord | undefined>;
  end(id: string): Promise<void>;
  close(): void;
}

/** The parts of an Implementation kept: enough to name the client upstream. */
export function clientInfoOf(info: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const k of ['name', 'version', 'title'] as const)
    if (typeof info[k] === 'string') out[k] = (info[k] as string).slice(0, 256);
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
  if (
    typeof upstream !== 'string' ||
    typeof principal !== 'string' ||
    typeof version !== 'string' ||
    !isObject(clientInfo) ||
    !isObject(capabilities)
  )
    return undefined;
  const uris = v.uris.filter((u): u is string => typeof u === 'string');
  const record: SessionRecord = { upstream, principal, version, clientInfo, capabilities, uris };
  if (typeof logLevel === 'string') record.logLevel = logLevel;
  if (v.runsTasks === true) record.runsTasks = true;
  if (Array.isArray(v.tasks)) record.tasks = v.tasks.filter((id): id is string => typeof id === 'string');
  return record;
}

function parsed(text: string): SessionRecord | undefined {
  try {
    return recordOf(JSON.parse(text));
  } catch {
    return undefined;
  }
}

export class MemoryFacts implements FactsStore {
  private readonly facts = new Map<string, { record: SessionRecord; expires: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly ttlMs: number) {
    this.sweeper = setInterval(
      () => {
        const now = Date.now();
        for (const [id, f] of this.facts) if (f.expires <= now) this.facts.delete(id);
      },
      Math.max(1_000, Math.min(ttlMs / 4, 30_000)),
    );
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

  async update(id: string, change: (record: SessionRecord) => SessionRecord): Promise<SessionRecord | undefined> {
    const record = await this.get(id);
    if (record === undefined) return undefined;
    const next = change(record);
    await this.put(id, next);
    return next;
  }

  async end(id: string): Promise<void> {
    this.facts.delete(id);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

// SET only over the text the change was made from: another replica's change in between is kept.
const SWAP = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

/** Tries of an update before it gives up: each lost only to another replica's change of the same session. */
const UPDATE_TRIES = 8;

interface FactsScripts {
  cwFactsSwap(key: string, from: string, to: string, ttlMs: number): Promise<number>;
}

/**
 * The records in Redis, one string key per session with the idle TTL. A read renews the TTL at
 * most every quarter TTL per replica, in the same round trip (GETEX), so a busy session costs
 * one command per request and an idle one nothing.
 */
export class RedisFacts implements FactsStore {
  private readonly renewed = new BoundedMap<string, number>(100_000);
  private readonly scripts: FactsScripts;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {
    redis.defineCommand('cwFactsSwap', { numberOfKeys: 1, lua: SWAP });
    this.scripts = redis as unknown as FactsScripts;
  }

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
      this.renewed.set(id, now);
    }
    return parsed(text);
  }

  async put(id: string, record: SessionRecord): Promise<void> {
    await this.redis.set(this.key(id), JSON.stringify(record), 'PX', this.ttlMs);
    this.renewed.set(id, Date.now());
  }

  async update(id: string, change: (record: SessionRecord) => SessionRecord): Promise<SessionRecord | undefined> {
    for (let i = 0; i < UPDATE_TRIES; i++) {
      const text = await this.redis.get(this.key(id));
      const record = text === null ? undefined : parsed(text);
      if (text === null || record === undefined) return undefined;
      const next = change(record);
      if ((await this.scripts.cwFactsSwap(this.key(id), text, JSON.stringify(next), this.ttlMs)) === 1) return next;
    }
    throw causewayError('overloaded', 'The legacy session changed too often at once to be updated');
  }

  async end(id: string): Promise<void> {
    this.renewed.delete(id);
    await this.redis.del(this.key(id));
  }

  close(): void {
    this.renewed.clear();
  }
}
