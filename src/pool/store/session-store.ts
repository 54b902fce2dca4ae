// Where pooled upstream sessions are recorded, so that any replica can use a session another
// one opened. The store holds only what a replica needs to speak on a session; the principal
// appears in a key only as a keyed hash.

import type { JsonObject } from '../../jsonrpc.js';
import type { RedisClient } from '../../bus/index.js';
import type { RedisBuckets, RedisGrants } from './shared/index.js';

export interface SessionRecord {
  key: string;
  /** Absent for upstreams that issue no session id (legacy "stateless" mode). */
  sessionId: string | undefined;
  /** The upstream URL the session lives on (one of the upstream's equivalent URLs). */
  target?: string;
  protocolVersion: string;
  initializeResult: JsonObject;
  createdAt: number;
  lastUsedAt: number;
  /** Bumped by every replacement, so a stale replica's compare-and-set loses. */
  generation: number;
}

/**
 * What `claim` found, in one step: a record to use (`live`), or none (or only the one known dead)
 * and whether the caller now holds the key's creation lock (`claimed`) or another does (`locked`).
 */
export type Claim =
  | { state: 'live'; record: SessionRecord }
  | { state: 'claimed' | 'locked'; record: SessionRecord | undefined };

/**
 * What a store that replicas share keeps beside the sessions, on its connection, for the stages that share state too.
 */
export interface SharedParts {
  /** The connection, for the records other stages keep there (tasks). */
  readonly client: RedisClient;
  /** The users' own upstream tokens (upstream/credentials). */
  readonly grants: RedisGrants;
  /** The limits.rate* token buckets (ingress/rate-limit.ts). */
  readonly buckets: RedisBuckets;
}

export interface SessionStore {
  readonly kind: string;
  /** Present when replicas share the store (Redis): what else it keeps for them. */
  readonly shared?: SharedParts;
  /** Resolves true once connected, false if not within `timeoutMs`; absent: ready at once. */
  ready?(timeoutMs: number): Promise<boolean>;
  /**
   * Why the replica must not report ready (its Redis never reached), for /readyz; undefined when
   * it may. Absent: never.
   */
  notReady?(): string | undefined;
  /** `listener` runs each time the connection comes back after being lost (a restarted Redis may have lost records). */
  onReconnect?(listener: () => void): void;
  get(key: string): Promise<SessionRecord | undefined>;
  /**
   * Reads the key's record and, when there is none or it has generation `dead` (known dead),
   * takes the key's creation lock for `owner` (or renews it), all at once.
   */
  claim(key: string, owner: string, ttlMs: number, dead?: number): Promise<Claim>;
  /**
   * Stores the record when its key has none; returns the record stored afterwards. Releases `owner`'s creation lock in
   * the same step.
   */
  insert(record: SessionRecord, owner?: string): Promise<SessionRecord>;
  /**
   * Replaces the stored record only while it still has generation `expected`; returns the record stored afterwards.
   * Releases `owner`'s lock too.
   */
  replace(expected: number, record: SessionRecord, owner?: string): Promise<SessionRecord>;
  /** Removes the record only while it still has `generation`; true when this call removed it. */
  remove(key: string, generation: number): Promise<boolean>;
  touch(entries: ReadonlyArray<{ key: string; lastUsedAt: number }>): Promise<void>;
  /** Cross-replica single flight: true when `owner` now holds the creation lock of `key`. */
  lock(key: string, owner: string, ttlMs: number): Promise<boolean>;
  unlock(key: string, owner: string): Promise<void>;
  /** Records last used before `before`, oldest first. */
  idle(before: number, limit: number): Promise<SessionRecord[]>;
  count(): Promise<number>;
  close(): Promise<void>;
}

/** The same upstream session (not merely the same key). */
export function sameRecord(a: SessionRecord, b: SessionRecord): boolean {
  return a.generation === b.generation && a.sessionId === b.sessionId && a.createdAt === b.createdAt;
}

/**
 * Initialize results by their JSON text, so that thousands of sessions of one upstream hold one
 * copy rather than one each (read-only: nothing changes a session's initialize result). Bounded;
 * the oldest text is forgotten first, and sessions keep what they were given.
 */
export class SharedResults {
  private readonly byText = new Map<string, JsonObject>();
  share(result: JsonObject): JsonObject {
    const text = JSON.stringify(result);
    const known = this.byText.get(text);
    if (known) return known;
    if (this.byText.size >= 64) this.byText.delete(this.byText.keys().next().value!);
    this.byText.set(text, result);
    return result;
  }
}
