// Cross-replica retries [MRTR]: a retry whose held call lives on another replica is handed to
// that replica over the message bus, which answers the round and sends back its result. The
// holder acknowledges at once; no acknowledgment within ackTimeoutMs means the holder is gone,
// and the caller falls back to replaying the call.

import { randomUUID } from 'node:crypto';
import { readMessage, type MessageBus } from '../bus/index.js';
import { CausewayError, causewayError, type ErrorReason } from '../errors.js';
import type { JsonObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';

export interface ForwardedRound {
  callId: string;
  round: number;
  inputResponses: Record<string, JsonObject>;
  /** The retry's span (tracing on): the holder's work for the round is traced under it. */
  traceparent?: string;
}

export type HandedResult = { kind: 'upstream'; response: JsonObject } | { kind: 'input'; result: JsonObject } | { kind: 'task'; created: JsonObject };

type Wire =
  | ({ t: 'round'; id: string; from: string } & ForwardedRound)
  | { t: 'ack'; id: string }
  | { t: 'reply'; id: string; result?: HandedResult; error?: { reason: ErrorReason; message: string; data?: unknown }; missing?: boolean };

const CLOSE_WAIT_MS = 5_000;

export type RoundServer = (round: ForwardedRound) => Promise<HandedResult | 'missing'>;

interface Waiting {
  acked: boolean;
  /** Called on the acknowledgment: from then on the holder has replyTimeoutMs to answer. */
  onAck(): void;
  resolve(v: HandedResult | 'unreachable'): void;
  reject(err: unknown): void;
}

export class Handoff {
  private readonly waiting = new Map<string, Waiting>();
  /** Rounds this replica is serving: close() lets them send their reply before the bus goes. */
  private readonly serving = new Set<Promise<void>>();
  private unsubscribe: (() => Promise<void>) | undefined;

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

  /** Starts answering rounds handed to this replica. */
  async serve(server: RoundServer): Promise<void> {
    this.unsubscribe = await this.bus.subscribe(this.channel(this.replicaId), (text) => {
      const handled = this.onMessage(text, server);
      this.serving.add(handled);
      void handled.finally(() => this.serving.delete(handled));
    });
  }

  private async onMessage(text: string, server: RoundServer): Promise<void> {
    const msg = readMessage<Wire>(text);
    if (msg === undefined) return;
    if (msg.t === 'round') {
      const to = this.channel(msg.from);
      await this.send(to, { t: 'ack', id: msg.id });
      let reply: Wire;
      try {
        const r = await server({ callId: msg.callId, round: msg.round, inputResponses: msg.inputResponses, traceparent: msg.traceparent });
        reply = r === 'missing' ? { t: 'reply', id: msg.id, missing: true } : { t: 'reply', id: msg.id, result: r };
      } catch (err) {
        const e = err instanceof CausewayError ? err : causewayError('internal_error');
        reply = { t: 'reply', id: msg.id, error: { reason: e.reason, message: e.message, data: e.data } };
      }
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
    await this.bus.publish(channel, JSON.stringify(msg)).catch((err: unknown) => this.log.warn({ err }, 'handoff publish failed'));
  }

  /**
   * Hands a retry to the holder replica: its result, or 'unreachable' when no replica holds the
   * call. A holder that acknowledged and then went quiet for replyTimeoutMs (it died mid-round)
   * costs an upstream_timeout, not a wait without end; the call's outcome is then unknown, so it
   * is not replayed.
   */
  async forward(holder: string, round: ForwardedRound, signal: AbortSignal, replyTimeoutMs: number): Promise<HandedResult | 'unreachable'> {
    if (!this.unsubscribe) return 'unreachable';
    const id = randomUUID();
    const done = new Promise<HandedResult | 'unreachable'>((resolve, reject) => {
      let timer: NodeJS.Timeout;
      const settle = () => {
        clearTimeout(timer);
        this.waiting.delete(id);
      };
      const w: Waiting = {
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
      timer = setTimeout(() => {
        if (!w.acked) w.resolve('unreachable');
      }, this.ackTimeoutMs);
      signal.addEventListener('abort', () => w.reject(signal.reason), { once: true });
    });
    await this.send(this.channel(holder), { t: 'round', id, from: this.replicaId, ...round });
    return done;
  }

  /**
   * Ends the handoff and closes its bus (it owns it). No new round is taken; the rounds being
   * served get up to CLOSE_WAIT_MS to send their reply (a forwarder left without one would wait
   * its whole reply timeout); no longer wait on a Redis that is gone.
   */
  async close(): Promise<void> {
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    const stopped = (async () => {
      await unsubscribe?.().catch(() => undefined);
      await Promise.allSettled([...this.serving]);
    })();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([stopped, new Promise((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
    for (const w of this.waiting.values()) w.resolve('unreachable');
    this.waiting.clear();
    await this.bus.close();
  }
}
