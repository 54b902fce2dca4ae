// Outside asks across replicas (store.kind=redis). The replica holding a session's GET stream is
// not always where the session's calls run: an ask that arrives on the stream goes to the one
// asking call in flight on the session on any replica, and is refused when there is none or more
// than one, as on a single replica (core/asking-calls.ts). The holder asks every replica how many such
// calls it has (one publish on a channel all replicas hear; PUBLISH tells how many heard it), adds
// up the counts, and hands the ask to the replica with the one call, which delivers it to that
// call as an ask of its own. Nothing is written per call: a warm call costs no Redis round trip,
// and an outside ask costs two pub/sub exchanges. A replica that does not answer within waitMs
// counts as having none (it is gone, and its calls with it); with Redis away the ask goes to a
// call of this replica's own, if it has exactly one, or is refused.

import { randomUUID } from 'node:crypto';
import { readMessage, type MessageBus } from '../../bus/index.js';
import type { JsonRpcRequest } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { sessionDigest, type AskRelay, type LocalAsks } from '../core/index.js';
import { BoundedMap } from '../../bounded.js';
import type { OutsideAskOutcome } from '../../metrics/index.js';

/** Hand-overs remembered for repeats. */
const REMEMBERED = 1_000;

type Wire =
  | { t: 'q'; id: string; from: string; u: string; s: string }
  | { t: 'n'; id: string; from: string; n: number }
  | { t: 'take'; id: string; from: string; u: string; s: string; r: JsonRpcRequest }
  | { t: 'took'; id: string; ok: boolean };

interface Tally {
  counts: Map<string, number>;
  /** Replies expected (the replicas that heard the query); undefined: unknown, wait the whole window. */
  expected: number | undefined;
  done(): void;
}

export class ReplicaAsks implements AskRelay {
  private readonly locals = new Map<string, LocalAsks>();
  private readonly tallies = new Map<string, Tally>();
  private readonly takes = new Map<string, (ok: boolean) => void>();
  /** Asks given here, by hand-over id. */
  private readonly taken = new BoundedMap<string, true>(REMEMBERED);
  private bus: MessageBus | undefined;
  private unsubscribe: Array<() => Promise<void>> = [];
  private closed = false;

  constructor(
    readonly replicaId: string,
    private readonly channelPrefix: string,
    private readonly waitMs: number,
    private readonly log: Logger,
  ) {}

  private get everyone(): string {
    return `${this.channelPrefix}asks`;
  }

  private inbox(replica: string): string {
    return `${this.channelPrefix}asks:${replica}`;
  }

  /** The calls of one upstream on this replica. */
  register(upstream: string, local: LocalAsks): void {
    this.locals.set(upstream, local);
  }

  /** Starts hearing queries and hand-overs; until then asks go to this replica's own calls only. */
  async start(bus: MessageBus): Promise<void> {
    const handle = (text: string): void => void this.onMessage(text);
    this.unsubscribe = [
      await bus.subscribe(this.everyone, handle),
      await bus.subscribe(this.inbox(this.replicaId), handle),
    ];
    if (this.closed) return this.close();
    this.bus = bus;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.bus = undefined;
    for (const u of this.unsubscribe.splice(0)) await u().catch(() => undefined);
    for (const t of this.tallies.values()) t.done();
    for (const settle of this.takes.values()) settle(false);
  }

  /**
   * Gives an ask from a session's GET stream to its call, on whichever replica that runs. Resolves
   * with where it went; on 'refused' the caller refuses it upstream. Never rejects.
   */
  async route(upstream: string, sessionId: string, r: JsonRpcRequest): Promise<OutsideAskOutcome> {
    const s = sessionDigest(sessionId);
    const alone = (): OutsideAskOutcome => (this.locals.get(upstream)?.giveByDigest(s, r) ? 'given' : 'refused');
    const bus = this.bus;
    if (!bus) return alone();
    let owner: string | undefined;
    try {
      owner = await this.find(bus, upstream, s);
    } catch (err) {
      this.log.warn({ err }, 'could not ask the other replicas for the call of an outside ask; only this one is asked');
      return alone();
    }
    if (owner === undefined) return 'refused';
    if (owner === this.replicaId) return alone();
    return (await this.handOver(bus, owner, upstream, s, r)) ? 'handed' : 'refused';
  }

  /** The replica with the one call that can take the ask; undefined when no replica or several calls can. */
  private async find(bus: MessageBus, upstream: string, s: string): Promise<string | undefined> {
    const id = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const tally: Tally = { counts: new Map(), expected: undefined, done: () => undefined };
    let done!: () => void;
    const settled = new Promise<void>((resolve) => {
      tally.done = done = resolve;
    });
    this.tallies.set(id, tally);
    try {
      const heard = await bus.publish(
        this.everyone,
        JSON.stringify({ t: 'q', id, from: this.replicaId, u: upstream, s } satisfies Wire),
      );
      // The replicas have waitMs from when the query went out (the bus holds it while Redis fails over).
      timer = setTimeout(done, this.waitMs);
      tally.expected = heard;
      if (heard !== undefined && tally.counts.size >= heard) tally.done();
      await settled;
    } finally {
      clearTimeout(timer);
      this.tallies.delete(id);
    }
    let total = 0;
    let owner: string | undefined;
    for (const [replica, n] of tally.counts) {
      total += n;
      if (n > 0) owner = replica;
    }
    return total === 1 ? owner : undefined;
  }

  private async handOver(
    bus: MessageBus,
    owner: string,
    upstream: string,
    s: string,
    r: JsonRpcRequest,
  ): Promise<boolean> {
    const id = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    let settle!: (ok: boolean) => void;
    const took = new Promise<boolean>((resolve) => {
      this.takes.set(id, (settle = resolve));
    });
    try {
      await bus.publish(
        this.inbox(owner),
        JSON.stringify({ t: 'take', id, from: this.replicaId, u: upstream, s, r } satisfies Wire),
      );
      timer = setTimeout(() => settle(false), this.waitMs);
      return await took;
    } catch (err) {
      this.log.warn({ err }, 'could not hand an outside ask to the replica of its call');
      return false;
    } finally {
      clearTimeout(timer);
      this.takes.delete(id);
    }
  }

  private async onMessage(text: string): Promise<void> {
    const msg = readMessage<Wire>(text);
    if (msg === undefined) return;
    switch (msg.t) {
      case 'q': {
        const n = this.locals.get(msg.u)?.count(msg.s) ?? 0;
        await this.reply(msg.from, { t: 'n', id: msg.id, from: this.replicaId, n });
        return;
      }
      case 'n': {
        const tally = this.tallies.get(msg.id);
        if (!tally) return;
        tally.counts.set(msg.from, msg.n);
        if (tally.expected !== undefined && tally.counts.size >= tally.expected) tally.done();
        return;
      }
      case 'take': {
        // A repeat (sent again across a failover) is not given twice.
        const again = this.taken.has(msg.id);
        this.taken.set(msg.id, true);
        const ok = again || (this.locals.get(msg.u)?.giveByDigest(msg.s, msg.r) ?? false);
        await this.reply(msg.from, { t: 'took', id: msg.id, ok });
        return;
      }
      case 'took':
        this.takes.get(msg.id)?.(msg.ok);
        return;
    }
  }

  private async reply(to: string, msg: Wire): Promise<void> {
    await this.bus
      ?.publish(this.inbox(to), JSON.stringify(msg))
      .catch((err: unknown) => this.log.debug({ err }, 'answering another replica about an outside ask failed'));
  }
}
