// What the listen channels of one session key agree on across replicas: who holds the session's
// standalone GET stream (a lease), and how many listeners hold each resources/subscribe URI (a
// count per channel, summed over the live ones), and where the holder's stream was (a cursor a
// successor resumes from). A channel joins the coordination of its key once
// and keeps the handle for its life. LocalCoordinator is the single-replica case: every channel
// holds its stream and its counts are the only ones. The Redis implementation lives in
// redis-coordination.ts.

export type HoldResult =
  /** This channel took the lease, and no other channel listens on the key. */
  | 'acquired'
  /** This channel took the lease while other channels listen: they may have missed changes while nobody held the stream. */
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

/** One channel's part in its key's coordination. No method rejects: a store failure degrades to this channel's own view. */
export interface ChannelCoordination {
  /** Takes or renews the GET-stream lease. */
  hold(): Promise<HoldResult>;
  /** Gives the lease up if this channel holds it. */
  release(): Promise<void>;
  /** States this channel's URI counts (absolute) and that it is alive; returns the transitions this caused. */
  sync(counts: ReadonlyMap<string, number>): Promise<Transitions>;
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
   * When set, channels check their lease this often, apart from the listen tick: the holder
   * renews it, the others take it over once the holder is gone. Unset: one replica, nothing to check.
   */
  readonly heartbeatMs?: number;
}

/** Keep-alive comments go out every keepAliveMs; the channels' housekeeping runs on the same tick, or on this one without comments. */
export const DEFAULT_TICK_MS = 15_000;

export function listenTickMs(keepAliveMs: number): number {
  return keepAliveMs > 0 ? keepAliveMs : DEFAULT_TICK_MS;
}

/** A lease (and a channel's liveness) outlives three missed renewals, and never less than 2 s. */
export function leaseTtlMs(keepAliveMs: number): number {
  return Math.max(3 * listenTickMs(keepAliveMs), 2_000);
}

/** subscriptions.takeoverMs: a GET-stream holder not heard of for this long is gone. */
export const DEFAULT_TAKEOVER_MS = 3_000;

/** The lease is renewed, and checked by the other channels, three times per takeoverMs. */
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

  hold(): Promise<HoldResult> {
    return Promise.resolve('acquired');
  }

  release(): Promise<void> {
    return Promise.resolve();
  }

  sync(counts: ReadonlyMap<string, number>): Promise<Transitions> {
    const before = this.counts;
    this.counts = positive(counts);
    return Promise.resolve(transitions(before, this.counts));
  }

  leave(): Promise<Transitions> {
    return this.sync(new Map());
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
