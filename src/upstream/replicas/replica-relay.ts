// A stdio or HTTP+SSE upstream session lives in one replica: its child process or SSE connection
// is there. With a shared store any replica may get a request on it, so ReplicaRelay wraps the
// replica's own client: the sessions it opens carry this replica's id as their `target`, and an
// operation on a session of another replica is sent to that replica over the message bus, which
// runs it on its own client and sends back the answer and whatever the upstream sent the call on
// the way (progress, logs, asks). The rest of Causeway sees one client, wherever the session is.
//
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
import { CausewayError, causewayError, type ErrorReason } from '../../errors.js';
import type { JsonRpcNotification, JsonValue, JsonRpcRequest, JsonRpcResponse, RequestId } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import {
  ResumeRefusedError,
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

type Handler = keyof StreamHandlers;
/** Operations remembered for repeats, by id: far more than a replica serves within a failover. */
const REMEMBERED = 1_000;
const HANDLERS: readonly Handler[] = ['onNotification', 'onServerRequest', 'beforeEvent', 'afterEvent'];

type Operation =
  | { op: 'request'; msg: JsonRpcRequest; handlers: Handler[]; headers?: Record<string, string>; timeoutMs?: number }
  | { op: 'resume'; callId: RequestId; lastEventId: string; handlers: Handler[]; timeoutMs?: number }
  | { op: 'notify'; msg: JsonRpcNotification }
  | { op: 'respond'; msg: JsonRpcResponse }
  | { op: 'stream'; handlers: Handler[]; lastEventId?: string }
  | { op: 'terminate' };

type WireError =
  | { kind: 'expired' }
  | { kind: 'unreachable' }
  | { kind: 'resume-refused'; httpStatus: number }
  | { kind: 'causeway'; reason: ErrorReason; message: string; data?: unknown };

type Wire =
  | ({ t: 'op'; id: string; from: string; ref: SessionRef } & Operation)
  | { t: 'ack'; id: string }
  | { t: 'event'; id: string; h: Handler; arg: unknown }
  /** An operation's outcome; for a stream, that it is open (value 'open') or unsupported. */
  | { t: 'done'; id: string; value?: unknown; error?: WireError }
  /** A stream that was open has ended. */
  | { t: 'end'; id: string; error?: WireError }
  | { t: 'cancel'; id: string }
  | { t: 'alive'; ids: string[] };

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

interface Incoming {
  from: string;
  abort: AbortController;
}

export class ReplicaRelay implements UpstreamSessionClient {
  private readonly outgoing = new Map<string, Outgoing>();
  private readonly incoming = new Map<string, Incoming>();
  /** Operations served here, by id: their outcome once sent, so a repeat is answered and not run again. */
  private readonly served = new Map<string, Wire | undefined>();
  private readonly ackTimeoutMs: number;
  private readonly heartbeatMs: number;
  private readonly deadAfterMs: number;
  private readonly inFlight: { count: number };
  private unsubscribe: (() => Promise<void>) | undefined;
  private starting: Promise<void> | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private closing = false;

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
    this.inFlight = opts.inFlight ?? { count: 0 };
  }

  /** Starts taking operations on this replica's sessions from the others, and their answers. */
  start(): Promise<void> {
    this.starting ??= this.bus.subscribe(this.channel(this.replicaId), (text) => this.onMessage(text), () => this.sendAgain()).then((u) => {
      this.unsubscribe = u;
    });
    return this.starting;
  }

  /** This replica's channel was down: answers sent to it meanwhile are lost, so operations not yet done are sent again (the owner runs each once). */
  private sendAgain(): void {
    for (const w of this.outgoing.values()) if (w.wire && !w.done) void this.bus.publish(w.wire.channel, w.wire.text).catch(() => undefined);
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

  request(
    session: SessionRef,
    msg: JsonRpcRequest,
    handlers: StreamHandlers,
    signal?: AbortSignal,
    extraHeaders?: Record<string, string>,
    timeoutMs?: number,
  ): Promise<JsonRpcResponse> {
    if (this.isLocal(session)) return this.local.request(session, msg, handlers, signal, extraHeaders, timeoutMs);
    const op: Operation = { op: 'request', msg, handlers: handlerNames(handlers), headers: extraHeaders, timeoutMs };
    return this.send(session, op, handlers, signal) as Promise<JsonRpcResponse>;
  }

  resumeCall(
    session: SessionRef,
    id: RequestId,
    lastEventId: string,
    handlers: StreamHandlers,
    signal: AbortSignal,
    timeoutMs?: number,
  ): Promise<JsonRpcResponse> {
    if (this.isLocal(session)) return this.local.resumeCall(session, id, lastEventId, handlers, signal, timeoutMs);
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

  async openStream(session: SessionRef, handlers: StreamHandlers, signal: AbortSignal, lastEventId?: string): Promise<'unsupported' | { done: Promise<void> }> {
    if (this.isLocal(session)) return this.local.openStream(session, handlers, signal, lastEventId);
    let done!: Promise<void>;
    const opened = await this.send(session, { op: 'stream', handlers: handlerNames(handlers), lastEventId }, handlers, signal, (w) => {
      done = new Promise<void>((resolve, reject) => (w.ended = (err) => (err === undefined ? resolve() : reject(err))));
    });
    return opened === 'unsupported' ? 'unsupported' : { done };
  }

  async terminate(session: SessionRef): Promise<void> {
    if (this.isLocal(session)) return this.local.terminate(session);
    await this.send(session, { op: 'terminate' }, {});
  }

  /** Lets the operations in flight here finish (the local client waits for them), then stops. */
  async close(): Promise<void> {
    this.closing = true;
    await this.local.close();
    await this.stop();
  }

  async destroy(): Promise<void> {
    this.closing = true;
    await this.local.destroy();
    await this.stop();
  }

  private async stop(): Promise<void> {
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    await unsubscribe?.().catch(() => undefined);
    for (const [id, w] of this.outgoing) this.fail(id, w, causewayError('upstream_unavailable', `Upstream ${this.name}: this replica is stopping`));
    for (const c of this.incoming.values()) c.abort.abort();
    this.incoming.clear();
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
  private async send(session: SessionRef, op: Operation, handlers: StreamHandlers, signal?: AbortSignal, onOpen?: (w: Outgoing) => void): Promise<unknown> {
    // Answers come on this replica's channel: a relay made after start-up (auto) waits for it, a while.
    if (!this.unsubscribe && this.starting) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.starting.catch(() => undefined), new Promise((r) => (timer = setTimeout(r, this.ackTimeoutMs)))]);
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
    const wire = { channel: this.channel(owner), text: JSON.stringify({ t: 'op', id, from: this.replicaId, ref: session, ...op } satisfies Wire) };
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
        if (this.served.has(msg.id)) {
          // A repeat (sent again across a failover): answered with what was sent for it, never run again.
          void this.publish(msg.from, this.served.get(msg.id) ?? { t: 'ack', id: msg.id });
          return;
        }
        this.served.set(msg.id, undefined);
        if (this.served.size > REMEMBERED) this.served.delete(this.served.keys().next().value!);
        void this.serve(msg);
        return;
      case 'cancel':
        this.incoming.get(msg.id)?.abort.abort();
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
        if (msg.error) w.reject(this.decode(msg.error));
        else w.resolve(msg.value);
        return;
      case 'end':
        this.outgoing.delete(msg.id);
        w.ended?.(msg.error ? this.decode(msg.error) : undefined);
        return;
    }
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
      Object.fromEntries(names.filter((h) => HANDLERS.includes(h)).map((h) => [h, (arg: unknown) => void this.publish(from, { t: 'event', id, h, arg })]));
    const ref: SessionRef = { ...msg.ref, target: this.replicaId };
    let stream: Promise<void> | undefined;
    try {
      let value: unknown;
      switch (msg.op) {
        case 'request':
          value = await this.local.request(ref, msg.msg, relayed(msg.handlers), abort.signal, msg.headers, msg.timeoutMs);
          break;
        case 'resume':
          value = await this.local.resumeCall(ref, msg.callId, msg.lastEventId, relayed(msg.handlers), abort.signal, msg.timeoutMs);
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

  private decode(e: WireError): Error {
    switch (e.kind) {
      case 'expired':
        return new SessionExpiredError(this.name);
      case 'unreachable':
        return new TargetUnreachableError(this.name, new Error('the replica holding the session is stopping'));
      case 'resume-refused':
        return new ResumeRefusedError(this.name, e.httpStatus);
      case 'causeway':
        return causewayError(e.reason, e.message, e.data as JsonValue | undefined);
    }
  }

  /** An operation's outcome, remembered for a repeat of it. */
  private async answer(replica: string, msg: Extract<Wire, { t: 'done' }>): Promise<void> {
    if (this.served.has(msg.id)) this.served.set(msg.id, msg);
    await this.publish(replica, msg);
  }

  private async publish(replica: string, msg: Wire): Promise<void> {
    await this.bus.publish(this.channel(replica), JSON.stringify(msg)).catch((err: unknown) => this.log.warn({ err }, 'replica relay publish failed'));
  }

  /** One timer while anything is in flight either way: heartbeats out, owners that went quiet failed. */
  private tick(): void {
    const busy = this.outgoing.size > 0 || this.incoming.size > 0;
    if (busy && this.ticker === undefined) {
      // Kept referenced: an operation waiting on another replica is work in flight.
      this.ticker = setInterval(() => this.beat(), Math.min(this.heartbeatMs, this.ackTimeoutMs));
    } else if (!busy && this.ticker !== undefined) {
      clearInterval(this.ticker);
      this.ticker = undefined;
    }
  }

  private beat(): void {
    const byPeer = new Map<string, string[]>();
    for (const [id, c] of this.incoming) byPeer.set(c.from, [...(byPeer.get(c.from) ?? []), id]);
    for (const [peer, ids] of byPeer) void this.publish(peer, { t: 'alive', ids });
    const now = Date.now();
    for (const [id, w] of this.outgoing) {
      if (!w.acked && now - w.sentAt >= this.ackTimeoutMs) {
        this.fail(id, w, new TargetUnreachableError(this.name, new Error('the replica holding the session did not answer')));
      } else if (w.acked && now - w.heardAt >= this.deadAfterMs) {
        const err = causewayError('upstream_unavailable', `Upstream ${this.name}: the replica running the session went away`);
        this.fail(id, w, w.ended ? new SessionExpiredError(this.name, { cause: err }) : err);
      }
    }
    this.tick();
  }
}

function handlerNames(handlers: StreamHandlers): Handler[] {
  return HANDLERS.filter((h) => handlers[h] !== undefined);
}

function encode(err: unknown): WireError {
  if (err instanceof TargetUnreachableError) return { kind: 'unreachable' };
  if (err instanceof SessionExpiredError) return { kind: 'expired' };
  if (err instanceof ResumeRefusedError) return { kind: 'resume-refused', httpStatus: err.httpStatus };
  const e = err instanceof CausewayError ? err : causewayError('internal_error');
  return { kind: 'causeway', reason: e.reason, message: e.message, data: e.data };
}
