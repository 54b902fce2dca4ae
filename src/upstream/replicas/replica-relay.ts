// A stdio or HTTP+SSE upstream session lives in one replica: its child process or SSE connection
// is there. With a shared store any replica may get a request on it, so ReplicaRelay wraps the
// replica's own client: the sessions it opens carry this replica's id as their `target`, and an
// operation on a session of another replica is sent to that replica over the message bus, which
// runs it on its own client and sends back the answer and whatever the upstream sent the call on
// the way (progress, logs, asks). The rest of Causeway sees one client, wherever the session is.
//
// The wire format is relay-wire.ts; the owner's side (running what others send) is relay-owner.ts.
// Cost: a request on another replica's session takes two bus hops more (a Redis round trip each
// way) and one bus message per message the upstream sends on the call.
// Across a Redis failover the bus holds an operation until Redis takes it; an operation whose
// answers may have been lost (this replica's subscription was down) is sent again, and the owner
// answers a repeat with what it sent for it, never running it twice.
// The owner gone: no acknowledgment within ackTimeoutMs of the operation going out means nothing was run there, so the
// request fails with TargetUnreachableError and the pool opens a session where it landed. An
// owner that acknowledged and then fell silent (no heartbeat for deadAfterMs) fails the call
// with upstream_unavailable: whether it ran is unknown, so it is not sent again.

import { randomUUID } from 'node:crypto';
import { readMessage, type MessageBus } from '../../bus/index.js';
import { causewayError } from '../../errors.js';
import type { JsonRpcNotification, JsonRpcResponse } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { decode, handlerNames, type Operation, type Wire } from './relay-wire.js';
import { RelayOwner } from './relay-owner.js';
import {
  SessionExpiredError,
  TargetUnreachableError,
  type SessionRef,
  type UpstreamSessionClient,
  type HandshakeResult,
  type InitializeParams,
  type StreamHandlers,
} from '../core/index.js';

export interface RelayOptions {
  /** An owner that has not acknowledged an operation this long after it was sent is taken to be gone. Default 1000. */
  ackTimeoutMs?: number;
  /** How often an owner tells the sender its operations still run. Default 1000. */
  heartbeatMs?: number;
  /** An acknowledged operation whose owner was silent this long fails. Default 5 heartbeats. */
  deadAfterMs?: number;
  /** The replica's count of requests in flight: a drain waits for the operations served here too (not streams). */
  inFlight?: { count: number };
}

interface Outgoing {
  /** When the operation went out (Infinity while the bus holds it for Redis to come back). */
  sentAt: number;
  /** The operation as sent, for sending again after a gap. */
  wire?: { channel: string; text: string };
  /** Its outcome arrived (a stream still open stays outgoing). */
  done?: boolean;
  acked: boolean;
  heardAt: number;
  handlers: StreamHandlers;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  /** Set once a stream is open: settles its `done`. */
  ended?: (err: unknown) => void;
}

export class ReplicaRelay implements UpstreamSessionClient {
  private readonly outgoing = new Map<string, Outgoing>();
  /** The operations other replicas send to this replica's sessions. */
  private readonly owner: RelayOwner;
  private readonly ackTimeoutMs: number;
  private readonly heartbeatMs: number;
  private readonly deadAfterMs: number;
  private unsubscribe: (() => Promise<void>) | undefined;
  private starting: Promise<void> | undefined;
  private ticker: NodeJS.Timeout | undefined;

  constructor(
    private readonly name: string,
    private readonly local: UpstreamSessionClient,
    private readonly bus: MessageBus,
    readonly replicaId: string,
    private readonly channelPrefix: string,
    private readonly log: Logger,
    opts: RelayOptions = {},
  ) {
    this.ackTimeoutMs = opts.ackTimeoutMs ?? 1_000;
    this.heartbeatMs = opts.heartbeatMs ?? 1_000;
    this.deadAfterMs = opts.deadAfterMs ?? this.heartbeatMs * 5;
    this.owner = new RelayOwner(
      local,
      replicaId,
      (replica, msg) => this.publish(replica, msg),
      () => this.tick(),
      opts.inFlight ?? { count: 0 },
    );
  }

  /** Starts taking operations on this replica's sessions from the others, and their answers. */
  start(): Promise<void> {
    this.starting ??= this.bus
      .subscribe(
        this.channel(this.replicaId),
        (text) => this.onMessage(text),
        () => this.sendAgain(),
      )
      .then((u) => {
        this.unsubscribe = u;
      });
    return this.starting;
  }

  /**
   * This replica's channel was down: answers sent to it meanwhile are lost, so operations not yet done are sent again
   * (the owner runs each once).
   */
  private sendAgain(): void {
    for (const w of this.outgoing.values())
      if (w.wire && !w.done) void this.bus.publish(w.wire.channel, w.wire.text).catch(() => undefined);
  }

  admits(): boolean {
    return true;
  }

  targetIndex(): number {
    return 0;
  }

  endsHere(target: string | undefined): boolean {
    return target === this.replicaId;
  }

  async initialize(params: InitializeParams, signal?: AbortSignal): Promise<HandshakeResult> {
    const hs = await this.local.initialize(params, signal);
    return { ...hs, target: this.replicaId };
  }

  request(...call: Parameters<UpstreamSessionClient['request']>): Promise<JsonRpcResponse> {
    if (this.isLocal(call[0])) return this.local.request(...call);
    const [session, msg, handlers, signal, extraHeaders, timeoutMs] = call;
    const op: Operation = { op: 'request', msg, handlers: handlerNames(handlers), headers: extraHeaders, timeoutMs };
    return this.send(session, op, handlers, signal) as Promise<JsonRpcResponse>;
  }

  resumeCall(...resume: Parameters<UpstreamSessionClient['resumeCall']>): Promise<JsonRpcResponse> {
    if (this.isLocal(resume[0])) return this.local.resumeCall(...resume);
    const [session, id, lastEventId, handlers, signal, timeoutMs] = resume;
    const op: Operation = { op: 'resume', callId: id, lastEventId, handlers: handlerNames(handlers), timeoutMs };
    return this.send(session, op, handlers, signal) as Promise<JsonRpcResponse>;
  }

  async notify(session: SessionRef, n: JsonRpcNotification): Promise<void> {
    if (this.isLocal(session)) return this.local.notify(session, n);
    await this.send(session, { op: 'notify', msg: n }, {});
  }

  async respond(session: SessionRef, r: JsonRpcResponse): Promise<void> {
    if (this.isLocal(session)) return this.local.respond(session, r);
    await this.send(session, { op: 'respond', msg: r }, {});
  }

  async openStream(
    session: SessionRef,
    handlers: StreamHandlers,
    signal: AbortSignal,
    lastEventId?: string,
  ): Promise<'unsupported' | { done: Promise<void> }> {
    if (this.isLocal(session)) return this.local.openStream(session, handlers, signal, lastEventId);
    let done!: Promise<void>;
    const opened = await this.send(
      session,
      { op: 'stream', handlers: handlerNames(handlers), lastEventId },
      handlers,
      signal,
      (w) => {
        done = new Promise<void>(
          (resolve, reject) => (w.ended = (err) => (err === undefined ? resolve() : reject(err))),
        );
      },
    );
    return opened === 'unsupported' ? 'unsupported' : { done };
  }

  async terminate(session: SessionRef): Promise<void> {
    if (this.isLocal(session)) return this.local.terminate(session);
    await this.send(session, { op: 'terminate' }, {});
  }

  /** Lets the operations in flight here finish (the local client waits for them), then stops. */
  async close(): Promise<void> {
    this.owner.closing = true;
    await this.local.close();
    await this.stop();
  }

  async destroy(): Promise<void> {
    this.owner.closing = true;
    await this.local.destroy();
    await this.stop();
  }

  private async stop(): Promise<void> {
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    await unsubscribe?.().catch(() => undefined);
    for (const [id, w] of this.outgoing)
      this.fail(id, w, causewayError('upstream_unavailable', `Upstream ${this.name}: this replica is stopping`));
    this.owner.abortAll();
    this.tick();
  }

  private isLocal(session: SessionRef): boolean {
    return session.target === undefined || session.target === this.replicaId;
  }

  private channel(replica: string): string {
    return `${this.channelPrefix}relay:${this.name}:${replica}`;
  }

  /**
   * Sends an operation to the session's owner and settles with its value. `onOpen` is called,
   * before the value is handed on, when the operation is a stream that the owner opened.
   */
  private async send(
    session: SessionRef,
    op: Operation,
    handlers: StreamHandlers,
    signal?: AbortSignal,
    onOpen?: (w: Outgoing) => void,
  ): Promise<unknown> {
    // Answers come on this replica's channel: a relay made after start-up (auto) waits for it, a while.
    if (!this.unsubscribe && this.starting) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.starting.catch(() => undefined),
        new Promise((r) => (timer = setTimeout(r, this.ackTimeoutMs))),
      ]);
      clearTimeout(timer);
    }
    if (signal?.aborted) throw signal.reason;
    if (!this.unsubscribe) throw new TargetUnreachableError(this.name, new Error('the replica relay is not running'));
    const owner = session.target!;
    const id = randomUUID();
    let onAbort: (() => void) | undefined;
    const result = new Promise<unknown>((resolve, reject) => {
      const now = Date.now();
      const w: Outgoing = {
        sentAt: Infinity,
        acked: false,
        heardAt: now,
        handlers,
        resolve: (value) => {
          if (value === 'open' && onOpen) {
            onOpen(w);
            this.outgoing.set(id, w);
          } else if (onAbort) signal!.removeEventListener('abort', onAbort);
          resolve(value);
        },
        reject: (err) => {
          if (onAbort) signal!.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      this.outgoing.set(id, w);
      if (signal) {
        onAbort = (): void => {
          if (this.outgoing.get(id) !== w) return;
          void this.publish(owner, { t: 'cancel', id });
          // An open stream ends quietly when its caller lets go, as the local client's do.
          this.fail(id, w, w.ended ? undefined : signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    this.tick();
    const wire = {
      channel: this.channel(owner),
      text: JSON.stringify({ t: 'op', id, from: this.replicaId, ref: session, ...op } satisfies Wire),
    };
    const out = this.outgoing.get(id);
    if (out) out.wire = wire;
    // The owner has ackTimeoutMs from when the operation went out, not from when Redis was asked to take it.
    void this.bus
      .publish(wire.channel, wire.text)
      .catch((err: unknown) => this.log.warn({ err }, 'replica relay publish failed'))
      .then(() => {
        const w = this.outgoing.get(id);
        if (w && w.sentAt === Infinity) w.sentAt = Date.now();
      });
    return result;
  }

  private fail(id: string, w: Outgoing, err: unknown): void {
    if (this.outgoing.get(id) !== w) return;
    this.outgoing.delete(id);
    if (w.ended) w.ended(err);
    else w.reject(err);
  }

  private onMessage(text: string): void {
    const msg = readMessage<Wire>(text);
    if (msg === undefined) return;
    switch (msg.t) {
      case 'op':
        this.owner.take(msg);
        return;
      case 'cancel':
        this.owner.cancel(msg.id);
        return;
      case 'alive': {
        const now = Date.now();
        for (const id of msg.ids) {
          const w = this.outgoing.get(id);
          if (w) w.heardAt = now;
        }
        return;
      }
    }
    const w = this.outgoing.get(msg.id);
    if (!w) return;
    w.heardAt = Date.now();
    switch (msg.t) {
      case 'ack':
        w.acked = true;
        return;
      case 'event': {
        const handler = w.handlers[msg.h] as ((arg: unknown) => void) | undefined;
        try {
          handler?.call(w.handlers, msg.arg);
        } catch (err) {
          this.log.error({ err, handler: msg.h }, 'upstream message handler threw');
        }
        return;
      }
      case 'done':
        w.done = true;
        this.outgoing.delete(msg.id);
        if (msg.error) w.reject(decode(this.name, msg.error));
        else w.resolve(msg.value);
        return;
      case 'end':
        this.outgoing.delete(msg.id);
        w.ended?.(msg.error ? decode(this.name, msg.error) : undefined);
        return;
    }
  }

  private async publish(replica: string, msg: Wire): Promise<void> {
    await this.bus
      .publish(this.channel(replica), JSON.stringify(msg))
      .catch((err: unknown) => this.log.warn({ err }, 'replica relay publish failed'));
  }

  /** One timer while anything is in flight either way: heartbeats out, owners that went quiet failed. */
  private tick(): void {
    const busy = this.outgoing.size > 0 || this.owner.size > 0;
    if (busy && this.ticker === undefined) {
      // Kept referenced: an operation waiting on another replica is work in flight.
      this.ticker = setInterval(() => this.beat(), Math.min(this.heartbeatMs, this.ackTimeoutMs));
    } else if (!busy && this.ticker !== undefined) {
      clearInterval(this.ticker);
      this.ticker = undefined;
    }
  }

  private beat(): void {
    for (const [peer, ids] of this.owner.byPeer()) void this.publish(peer, { t: 'alive', ids });
    const now = Date.now();
    for (const [id, w] of this.outgoing) {
      if (!w.acked && now - w.sentAt >= this.ackTimeoutMs) {
        this.fail(
          id,
          w,
          new TargetUnreachableError(this.name, new Error('the replica holding the session did not answer')),
        );
      } else if (w.acked && now - w.heardAt >= this.deadAfterMs) {
        const err = causewayError(
          'upstream_unavailable',
          `Upstream ${this.name}: the replica running the session went away`,
        );
        this.fail(id, w, w.ended ? new SessionExpiredError(this.name, { cause: err }) : err);
      }
    }
    this.tick();
  }
}
