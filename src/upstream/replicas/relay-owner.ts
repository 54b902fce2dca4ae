// The owner's side of the replica relay (replica-relay.ts): the operations other replicas send
// to the sessions this replica holds, run on its own client, their acknowledgment, the upstream's
// messages relayed on the way, their outcome. Each is run once: a repeat (sent again across a
// failover) is answered with what was sent for it.

import type { SessionRef, StreamHandlers, UpstreamSessionClient } from '../core/index.js';
import { encode, HANDLERS, REMEMBERED, type Handler, type Wire } from './relay-wire.js';
import { BoundedMap } from '../../bounded.js';

interface Incoming {
  from: string;
  abort: AbortController;
}

export class RelayOwner {
  private readonly incoming = new Map<string, Incoming>();
  /** Operations served here, by id: their outcome once sent, so a repeat is answered and not run again. */
  private readonly served = new BoundedMap<string, Wire | undefined>(REMEMBERED);
  /** Set when the replica stops: operations are then refused as unreachable, so the sender opens its own session. */
  closing = false;

  constructor(
    private readonly local: UpstreamSessionClient,
    private readonly replicaId: string,
    private readonly publish: (replica: string, msg: Wire) => Promise<void>,
    /** Called when operations start or end here: the relay's one timer follows them. */
    private readonly tick: () => void,
    /** The replica's count of requests in flight: a drain waits for the operations served here too (not streams). */
    private readonly inFlight: { count: number },
  ) {}

  get size(): number {
    return this.incoming.size;
  }

  /** An operation from another replica: run, or answered again when it is a repeat. */
  take(msg: Extract<Wire, { t: 'op' }>): void {
    if (this.served.has(msg.id)) {
      void this.publish(msg.from, this.served.get(msg.id) ?? { t: 'ack', id: msg.id });
      return;
    }
    this.served.set(msg.id, undefined);
    void this.serve(msg);
  }

  cancel(id: string): void {
    this.incoming.get(id)?.abort.abort();
  }

  abortAll(): void {
    for (const c of this.incoming.values()) c.abort.abort();
    this.incoming.clear();
  }

  /** The operations running here, by the replica that sent them: their heartbeats. */
  byPeer(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const [id, c] of this.incoming) out.set(c.from, [...(out.get(c.from) ?? []), id]);
    return out;
  }

  /** Runs another replica's operation on this replica's client. */
  private async serve(msg: Extract<Wire, { t: 'op' }>): Promise<void> {
    const { id, from } = msg;
    if (this.closing) {
      await this.publish(from, { t: 'ack', id });
      await this.publish(from, { t: 'done', id, error: { kind: 'unreachable' } });
      return;
    }
    // Registered before the acknowledgment, so a cancel right behind it finds the operation.
    const abort = new AbortController();
    this.incoming.set(id, { from, abort });
    this.tick();
    const counted = msg.op !== 'stream';
    if (counted) this.inFlight.count++;
    await this.publish(from, { t: 'ack', id });
    const relayed = (names: Handler[]): StreamHandlers =>
      Object.fromEntries(
        names
          .filter((h) => HANDLERS.includes(h))
          .map((h) => [h, (arg: unknown) => void this.publish(from, { t: 'event', id, h, arg })]),
      );
    const ref: SessionRef = { ...msg.ref, target: this.replicaId };
    let stream: Promise<void> | undefined;
    try {
      let value: unknown;
      switch (msg.op) {
        case 'request':
          value = await this.local.request(
            ref,
            msg.msg,
            relayed(msg.handlers),
            abort.signal,
            msg.headers,
            msg.timeoutMs,
          );
          break;
        case 'resume':
          value = await this.local.resumeCall(
            ref,
            msg.callId,
            msg.lastEventId,
            relayed(msg.handlers),
            abort.signal,
            msg.timeoutMs,
          );
          break;
        case 'notify':
          await this.local.notify(ref, msg.msg);
          break;
        case 'respond':
          await this.local.respond(ref, msg.msg);
          break;
        case 'terminate':
          await this.local.terminate(ref);
          break;
        case 'stream': {
          const opened = await this.local.openStream(ref, relayed(msg.handlers), abort.signal, msg.lastEventId);
          if (opened !== 'unsupported') stream = opened.done;
          value = opened === 'unsupported' ? 'unsupported' : 'open';
          break;
        }
      }
      await this.answer(from, { t: 'done', id, value });
      if (stream) {
        const error = await stream.then(
          () => undefined,
          (err: unknown) => encode(err),
        );
        await this.publish(from, { t: 'end', id, error });
      }
    } catch (err) {
      await this.answer(from, { t: 'done', id, error: encode(err) });
    } finally {
      this.incoming.delete(id);
      if (counted) this.inFlight.count--;
    }
  }

  /** An operation's outcome, remembered for a repeat of it. */
  private async answer(replica: string, msg: Extract<Wire, { t: 'done' }>): Promise<void> {
    if (this.served.has(msg.id)) this.served.set(msg.id, msg);
    await this.publish(replica, msg);
  }
}
