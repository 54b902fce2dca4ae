// What the listen channels of one session key agree on across replicas: who holds the session's
// standalone GET stream (a lease), how many listeners hold each resources/subscribe URI (a count
// per channel, summed over the channels of live replicas), and where the holder's stream was (a
// cursor a successor resumes from). A channel joins the coordination of its key once and keeps
// the handle for its life. Liveness is per replica (bus/liveness.ts), never per channel: nothing
// here is renewed while nothing changes. LocalCoordinator is the single-replica case: every
// channel holds its stream and its counts are the only ones. The Redis implementation lives in
// redis-coordination.ts.

import type { LivenessListener } from '../bus/index.js';

export type HoldResult =
  /** This channel took the lease, and no other channel listens on the key. */
  | 'acquired'
  /**
   * This channel took the lease while other channels listen: they may have missed changes while nobody held the stream.
   */
  | 'acquired-others'
  /** This channel already held it; renewed. */
  | 'renewed'
  /** Another channel holds it. */
  | 'taken'
  /** The coordination store did not answer: nothing is known. */
  | 'unknown';

/** URIs whose count across every channel of the key went from 0 (subscribe upstream) or to 0 (unsubscribe). */
export interface Transitions {
  subscribe: string[];
  unsubscribe: string[];
}

/**
 * One channel's part in its key's coordination. No method rejects: a store failure degrades to this channel's own view.
 */
export interface ChannelCoordination {
  /**
   * Takes or renews the GET-stream lease; `fresh`: a take with nobody else listening forgets the old cursor too (the
   * stream starts afresh).
   */
  hold(fresh?: boolean): Promise<HoldResult>;
  /** Gives the lease up if this channel holds it. */
  release(): Promise<void>;
  /** Whether the holder this channel last found holding the lease is on one of `replicas`. */
  heldByOneOf(replicas: readonly string[]): boolean;
  /** A write of this channel's did not reach the store (it was away): its counts are to be stated again. */
  readonly behind: boolean;
  /**
   * The store is away or came back moments ago (bus/liveness.ts `settling`), perhaps empty: a lease found free may be
   * one whose holder still keeps its stream and has yet to state it again. Only a holder asks for the lease meanwhile.
   */
  readonly settling: boolean;
  /**
   * States this channel's URI counts (absolute) and whether it listens (rather than only standing by); returns the
   * transitions this caused.
   */
  sync(counts: ReadonlyMap<string, number>, listening: boolean): Promise<Transitions>;
  /** The channel is gone: its counts are dropped. */
  leave(): Promise<Transitions>;
  /** Those of `uris` some channel still counts. */
  held(uris: readonly string[]): Promise<string[]>;
  /** Every URI some channel counts. */
  uris(): Promise<string[]>;
  /** The GET-stream cursor the key's holder last shared (`<session mark> <event id>`), if any. */
  cursor(): Promise<string | undefined>;
  /**
   * Shares this holder's GET-stream cursor (undefined: forget it). Never waits and never fails;
   * writes may be coalesced, but only the holder's writes land, in order, the newest last.
   */
  mark(cursor: string | undefined): void;
}

export interface ListenCoordinator {
  join(keyId: string): ChannelCoordination;
  /**
   * Across replicas: `listener` hears of replicas that lapsed (what they held is free: their
   * leases to take over, their counts to drop), of this replica's own lapse, and of the end of
   * a settling window (leases nobody stated again since are free). Unset: one replica, nothing to watch.
   */
  watch?(listener: LivenessListener): () => void;
}

/**
 * Keep-alive comments go out every keepAliveMs; the channels' housekeeping runs on the same tick, or on this one
 * without comments.
 */
export const DEFAULT_TICK_MS = 15_000;

export function listenTickMs(keepAliveMs: number): number {
  return keepAliveMs > 0 ? keepAliveMs : DEFAULT_TICK_MS;
}

/**
 * How long a lease lives unless its holder restates it (after half of that): only so that keys nobody ends are
 * collected.
 */
export const LEASE_TTL_MS = 24 * 3600_000;

/** subscriptions.takeoverMs: a replica not heard of for this long has lapsed, and its GET streams are taken over. */
export const DEFAULT_TAKEOVER_MS = 3_000;

/** Each replica states itself alive three times per takeoverMs. */
export function heartbeatMs(takeoverMs: number): number {
  return Math.max(10, Math.floor(takeoverMs / 3));
}

/** Positive counts only. */
export function positive(counts: ReadonlyMap<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [uri, n] of counts) if (n > 0) out.set(uri, n);
  return out;
}

export function transitions(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): Transitions {
  return {
    subscribe: [...after.keys()].filter((u) => !before.has(u)),
    unsubscribe: [...before.keys()].filter((u) => !after.has(u)),
  };
}

class LocalChannel implements ChannelCoordination {
  private counts = new Map<string, number>();
  readonly behind = false;
  readonly settling = false;

  hold(): Promise<HoldResult> {
    return Promise.resolve('acquired');
  }

  release(): Promise<void> {
    return Promise.resolve();
  }

  heldByOneOf(): boolean {
    return false;
  }

  sync(counts: ReadonlyMap<string, number>, _listening?: boolean): Promise<Transitions> {
    const before = this.counts;
    this.counts = positive(counts);
    return Promise.resolve(transitions(before, this.counts));
  }

  leave(): Promise<Transitions> {
    return this.sync(new Map(), false);
  }

  held(uris: readonly string[]): Promise<string[]> {
    return Promise.resolve(uris.filter((u) => this.counts.has(u)));
  }

  uris(): Promise<string[]> {
    return Promise.resolve([...this.counts.keys()]);
  }

  cursor(): Promise<string | undefined> {
    return Promise.resolve(undefined);
  }

  mark(): void {}
}

/** One replica: each channel holds its own stream and is alone with its counts. */
export class LocalCoordinator implements ListenCoordinator {
  join(): ChannelCoordination {
    return new LocalChannel();
  }
}
