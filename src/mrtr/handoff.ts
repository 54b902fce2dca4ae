// Cross-replica retries [MRTR]: a retry whose held call lives on another replica is handed to
// that replica over the message bus, which answers the round and sends back its result. The
// holder acknowledges at once; no acknowledgment within ackTimeoutMs of the round being sent
// (a round Redis could not take yet is held by the bus until it can) means the holder is gone,
// and the caller falls back to replaying the call.
// Across a failover a round may arrive twice (the bus sends again what Redis may not have taken,
// and a caller whose subscription was down sends its unanswered rounds again): the holder serves
// a round once, and answers a repeat with the acknowledgment, or the reply, it already sent.

import { randomUUID } from 'node:crypto';
import { readMessage, type MessageBus } from '../bus/index.js';
import { CausewayError, causewayError, type ErrorReason } from '../errors.js';
import { InFlight, InFlightByKey } from '../in-flight.js';
import type { JsonObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { BoundedMap } from '../bounded.js';

export interface ForwardedRound {
  callId: string;
  round: number;
  inputResponses: Record<string, JsonObject>;
  /** The retry's span (tracing on): the holder's work for the round is traced under it. */
  traceparent?: string;
}

/**
 * What a round comes to: the upstream's answer (a `Response`), the questions of an input round, or a call
 * held as a task (the tasks bridge took it over; its CreateTaskResult).
 */
export type RoundOutcome<Response> =
  | { kind: 'upstream'; response: Response }
  | { kind: 'input'; result: JsonObject }
  | { kind: 'task'; created: JsonObject };

/** A round's outcome as it crosses the bus, the upstream's answer a plain object. */
export type HandedResult = RoundOutcome<JsonObject>;

type Wire =
  | ({ t: 'round'; id: string; from: string } & ForwardedRound)
  | { t: 'ack'; id: string }
  | {
      t: 'reply';
      id: string;
      result?: HandedResult;
      error?: { reason: ErrorReason; message: string; data?: unknown };
      missing?: boolean;
    };

const CLOSE_WAIT_MS = 5_000;
/** A round nobody heard is sent again this often, within the holder's time to acknowledge. */
const RESEND_MS = 100;
/** Rounds remembered for repeats, by id: far more than a replica serves within a failover. */
const REMEMBERED = 1_000;

export type RoundServer = (round: ForwardedRound) => Promise<HandedResult | 'missing'>;

interface Waiting {
  /** The round as sent, for sending again after a gap. */
  holder: string;
  wire: string;
  acked: boolean;
  /** Called on the acknowledgment: from then on the holder has replyTimeoutMs to answer. */
  onAck(): void;
  resolve(v: HandedResult | 'unreachable'): void;
  reject(err: unknown): void;
}

export class Handoff {
  private readonly waiting = new InFlightByKey<Waiting>();
  /** Rounds this replica is serving: close() lets them send their reply before the bus goes. */
  private readonly serving = new InFlight<Promise<void>>();
  /** Rounds served or being served here, by id: their reply once sent. */
  private readonly served = new BoundedMap<string, Wire | undefined>(REMEMBERED);
  private unsubscribe: (() => Promise<void>) | undefined;
  private closed = false;

  constructor(
    private readonly bus: MessageBus,
    readonly replicaId: string,
    private readonly channelPrefix: string,
    private readonly ackTimeoutMs: number,
    private readonly log: Logger,
  ) {}

  private channel(replica: string): string {
    return `${this.channelPrefix}mrtr:${replica}`;
  }

  /**
   * Starts answering rounds handed to this replica; resolves once it does. With Redis away that
   * waits for Redis (the bus makes the subscription when it can), so start-up need not wait on it.
   */
  async serve(server: RoundServer): Promise<void> {
    const unsubscribe = await this.bus.subscribe(
      this.channel(this.replicaId),
      (text) => {
        const handled = this.onMessage(text, server);
        const entry = this.serving.add(handled);
        void handled.finally(() => this.serving.delete(entry));
      },
      () => this.sendAgain(),
    );
    if (this.closed) return void (await unsubscribe().catch(() => undefined));
    this.unsubscribe = unsubscribe;
  }

  /**
   * This replica's channel was down: acknowledgments and replies sent to it meanwhile are lost, so its unanswered
   * rounds go again.
   */
  private sendAgain(): void {
    for (const w of this.waiting.values()) void this.bus.publish(this.channel(w.holder), w.wire).catch(() => undefined);
  }

  private async onMessage(text: string, server: RoundServer): Promise<void> {
    const msg = readMessage<Wire>(text);
    if (msg === undefined) return;
    if (msg.t === 'round') {
      const to = this.channel(msg.from);
      if (this.served.has(msg.id)) {
        // A repeat: what was sent for it may have been lost.
        await this.send(to, this.served.get(msg.id) ?? { t: 'ack', id: msg.id });
        return;
      }
      this.served.set(msg.id, undefined);
      await this.send(to, { t: 'ack', id: msg.id });
      let reply: Wire;
      try {
        const r = await server({
          callId: msg.callId,
          round: msg.round,
          inputResponses: msg.inputResponses,
          traceparent: msg.traceparent,
        });
        reply = r === 'missing' ? { t: 'reply', id: msg.id, missing: true } : { t: 'reply', id: msg.id, result: r };
      } catch (err) {
        const e = err instanceof CausewayError ? err : causewayError('internal_error');
        reply = { t: 'reply', id: msg.id, error: { reason: e.reason, message: e.message, data: e.data } };
      }
      if (this.served.has(msg.id)) this.served.set(msg.id, reply);
      await this.send(to, reply);
      return;
    }
    const w = this.waiting.get(msg.id);
    if (!w) return;
    if (msg.t === 'ack') {
      w.acked = true;
      w.onAck();
      return;
    }
    this.waiting.delete(msg.id);
    if (msg.missing) w.resolve('unreachable');
    else if (msg.error) w.reject(causewayError(msg.error.reason, msg.error.message, msg.error.data as never));
    else if (msg.result) w.resolve(msg.result);
  }

  private async send(channel: string, msg: Wire): Promise<void> {
    await this.bus
      .publish(channel, JSON.stringify(msg))
      .catch((err: unknown) => this.log.warn({ err }, 'handoff publish failed'));
  }

  /**
   * Hands a retry to the holder replica: its result, or 'unreachable' when no replica holds the
   * call. A holder that acknowledged and then went quiet for replyTimeoutMs (it died mid-round)
   * costs an upstream_timeout, not a wait without end; the call's outcome is then unknown, so it
   * is not replayed.
   */
  async forward(
    holder: string,
    round: ForwardedRound,
    signal: AbortSignal,
    replyTimeoutMs: number,
  ): Promise<HandedResult | 'unreachable'> {
    if (!this.unsubscribe) return 'unreachable';
    const id = randomUUID();
    const wire = JSON.stringify({ t: 'round', id, from: this.replicaId, ...round } satisfies Wire);
    let sent!: () => void;
    const done = new Promise<HandedResult | 'unreachable'>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const settle = () => {
        settled = true;
        clearTimeout(timer);
        this.waiting.delete(id);
      };
      const w: Waiting = {
        holder,
        wire,
        acked: false,
        onAck: () => {
          clearTimeout(timer);
          timer = setTimeout(() => {
            settle();
            reject(causewayError('upstream_timeout', 'The replica holding this call did not answer in time'));
          }, replyTimeoutMs);
        },
        resolve: (v) => {
          settle();
          resolve(v);
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      };
      this.waiting.set(id, w);
      // The holder has ackTimeoutMs from when the round went out, not from when Redis was asked to take it.
      sent = () => {
        if (settled || w.acked || timer !== undefined) return;
        timer = setTimeout(() => {
          if (!w.acked) w.resolve('unreachable');
        }, this.ackTimeoutMs);
      };
      signal.addEventListener('abort', () => w.reject(signal.reason), { once: true });
    });
    // Nobody heard it (the holder's subscription is being made again after a failover): sent again
    // while the holder has time to acknowledge. A bus that cannot count (Cluster) relies on the
    // holder's repeats and the caller's own retries.
    let firstSent: number | undefined;
    const push = (): void => {
      void this.bus.publish(this.channel(holder), wire).then(
        (heard) => {
          firstSent ??= Date.now();
          sent();
          const w = this.waiting.get(id);
          if (heard === 0 && w && !w.acked && Date.now() - firstSent < this.ackTimeoutMs)
            setTimeout(push, RESEND_MS).unref();
        },
        (err: unknown) => {
          this.log.warn({ err }, 'handoff publish failed');
          sent();
        },
      );
    };
    push();
    return done;
  }

  /**
   * Ends the handoff and closes its bus (it owns it). No new round is taken; the rounds being
   * served get up to CLOSE_WAIT_MS to send their reply (a forwarder left without one would wait
   * its whole reply timeout); no longer wait on a Redis that is gone.
   */
  async close(): Promise<void> {
    this.closed = true;
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    const stopped = (async () => {
      await unsubscribe?.().catch(() => undefined);
      await Promise.allSettled(this.serving.values());
    })();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([stopped, new Promise((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
    // Each takes itself out of waiting as it settles.
    for (const w of this.waiting.values()) w.resolve('unreachable');
    await this.bus.close();
  }
}
