// The gateway cache's entries on one replica: bounded in bytes, least recently used evicted
// first (a Map keeps insertion order; a hit moves its entry to the end). Each entry is indexed by
// its upstream's method, and by the legacy session it came from, so that a change notification
// or a replaced session drops exactly its entries.

import { groupOf } from './keys.js';
import type { CacheScope, DropReason } from '../metrics/index.js';

export interface Entry {
  key: string;
  upstream: string;
  method: string;
  scope: CacheScope;
  /** resources/read's uri. */
  uri: string | undefined;
  /** The pooled legacy session's key id it was read on, for a private entry. */
  session: string | undefined;
  /** The result as JSON without its ttlMs, from after the opening brace: `"resultType":…}`. */
  rest: string;
  /** The ttlMs the result carried (or the policy gave it): what clients may keep it for, at most. */
  ttlMs: number;
  expiresAt: number;
  /** Roughly what it holds in memory. */
  bytes: number;
}

/** Per-entry overhead beyond its text: the key, the object, the map slots. */
const OVERHEAD = 256;

export function sizeOf(key: string, rest: string): number {
  return OVERHEAD + key.length + rest.length;
}

export class MemoryTier {
  private readonly entries = new Map<string, Entry>();
  private readonly groups = new Map<string, Set<string>>();
  private readonly sessions = new Map<string, Set<string>>();
  private total = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly onDrop: (e: Entry, why: DropReason) => void,
  ) {}

  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.entries.size;
  }

  /** A fresh entry (made the most recently used), or undefined; a stale one is dropped. */
  get(key: string, now: number): Entry | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (e.expiresAt <= now) {
      this.remove(e, 'expired');
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, e);
    return e;
  }

  /** Keeps `e`, evicting the least recently used until it fits; an entry over an eighth of the bound is not kept. */
  set(e: Entry): boolean {
    if (e.bytes > this.maxBytes / 8) return false;
    const old = this.entries.get(e.key);
    if (old) this.remove(old, 'invalidated', false);
    while (this.total + e.bytes > this.maxBytes) {
      const oldest = this.entries.values().next().value;
      if (oldest === undefined) break;
      this.remove(oldest, 'evicted');
    }
    this.entries.set(e.key, e);
    this.total += e.bytes;
    index(this.groups, groupOf(e.upstream, e.method), e.key);
    if (e.session !== undefined) index(this.sessions, e.session, e.key);
    return true;
  }

  /** Bytes held, by method and scope. */
  bytesBy(): Array<[string, CacheScope, number]> {
    const sums = new Map<string, number>();
    for (const e of this.entries.values()) {
      const k = `${e.method} ${e.scope}`;
      sums.set(k, (sums.get(k) ?? 0) + e.bytes);
    }
    return [...sums].map(([k, n]) => {
      const [method, scope] = k.split(' ') as [string, CacheScope];
      return [method, scope, n];
    });
  }

  /** Drops an upstream's entries of `method` (only those of `uri`, when given); returns how many. */
  dropMethod(upstream: string, method: string, uri?: string): number {
    const keys = this.groups.get(groupOf(upstream, method));
    if (keys === undefined) return 0;
    let n = 0;
    for (const key of [...keys]) {
      const e = this.entries.get(key);
      if (e === undefined || (uri !== undefined && e.uri !== uri)) continue;
      this.remove(e, 'invalidated');
      n++;
    }
    return n;
  }

  /** Drops every entry. */
  clear(): void {
    for (const e of [...this.entries.values()]) this.remove(e, 'invalidated');
  }

  /** Drops the entries read on one legacy session. */
  dropSession(session: string): number {
    const keys = this.sessions.get(session);
    if (keys === undefined) return 0;
    let n = 0;
    for (const key of [...keys]) {
      const e = this.entries.get(key);
      if (e === undefined) continue;
      this.remove(e, 'invalidated');
      n++;
    }
    return n;
  }

  private remove(e: Entry, why: DropReason, tell = true): void {
    this.entries.delete(e.key);
    this.total -= e.bytes;
    unindex(this.groups, groupOf(e.upstream, e.method), e.key);
    if (e.session !== undefined) unindex(this.sessions, e.session, e.key);
    if (tell) this.onDrop(e, why);
  }
}

function index(map: Map<string, Set<string>>, at: string, key: string): void {
  let set = map.get(at);
  if (set === undefined) map.set(at, (set = new Set()));
  set.add(key);
}

function unindex(map: Map<string, Set<string>>, at: string, key: string): void {
  const set = map.get(at);
  if (set === undefined) return;
  set.delete(key);
  if (set.size === 0) map.delete(at);
}
