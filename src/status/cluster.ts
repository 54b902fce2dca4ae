// The status page across replicas. With the Redis store each replica publishes its part on its
// liveness beat (bus/liveness.ts), one SET with a TTL of the liveness TTL, so a part outlives its
// replica by one TTL at most; a /status request reads the parts of the replicas live as the last
// beat read them, with one MGET. Redis's cost is O(replicas): a SET per replica per beat, and an
// MGET of the live replicas per page view, never anything per session or per request.
//
//   P status:{status}:<replica id>   string   that replica's part (JSON, part.ts); PX the liveness TTL.
//
// The one hash tag puts every part in one Cluster slot, so one MGET reads them. With the memory
// store the page shows this replica alone.

import type { LivenessListener } from '../bus/index.js';
import type { Logger } from '../log.js';
import type { ReplicaPart } from './part.js';
import { readPart, statusView, type StatusView } from './view.js';

/** What the parts are kept with: ioredis's Redis or Cluster. */
export interface PartStore {
  set(key: string, value: string, px: 'PX', ms: number): Promise<unknown>;
  mget(keys: string[]): Promise<Array<string | null>>;
}

export interface SharedStatus {
  store: PartStore;
  keyPrefix: string;
  /** This replica's liveness: the beat to publish on, and the replicas live. */
  liveness: { live(): string[]; on(listener: LivenessListener): () => void };
  /** How long a part lives: the liveness TTL (subscriptions.takeoverMs). */
  ttlMs: number;
}

export class ClusterStatus {
  private publishing = false;
  private failing = false;
  private stop: (() => void) | undefined;

  constructor(
    private readonly own: () => Promise<ReplicaPart>,
    private readonly shared: SharedStatus | undefined,
    private readonly log: Logger,
  ) {}

  /** Publishes on each beat from now on (the first beat comes with the liveness's start). */
  start(): void {
    this.stop ??= this.shared?.liveness.on({ beat: () => void this.publish() });
  }

  close(): void {
    this.stop?.();
    this.stop = undefined;
  }

  /** Every live replica's part, this one's fresh. */
  async view(): Promise<StatusView> {
    const self = await this.own();
    if (this.shared === undefined) return statusView(self, [], 'memory');
    const others = this.shared.liveness.live().filter((id) => id !== self.replica.id);
    if (others.length === 0) return statusView(self, [], 'redis');
    try {
      const texts = await this.shared.store.mget(others.map((id) => this.key(id)));
      const parts = texts.map(readPart).filter((p): p is ReplicaPart => p !== undefined);
      return statusView(self, parts, 'redis');
    } catch (err) {
      this.log.debug({ err }, "cannot read the other replicas' status; showing this one's");
      return statusView(self, [], 'redis', true);
    }
  }

  private key(replicaId: string): string {
    return `${this.shared!.keyPrefix}status:{status}:${replicaId}`;
  }

  private async publish(): Promise<void> {
    const shared = this.shared;
    if (shared === undefined || this.publishing) return;
    this.publishing = true;
    try {
      const part = await this.own();
      await shared.store.set(this.key(part.replica.id), JSON.stringify(part), 'PX', shared.ttlMs);
      if (this.failing) this.log.info('status part published again');
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.log.warn({ err }, "cannot publish this replica's status part; other pages miss it");
      this.failing = true;
    } finally {
      this.publishing = false;
    }
  }
}
