// The holder: a legacy call that asked the client something stays open upstream while the
// client answers through input_required rounds. A PendingCall gathers the call's asks, answers
// them from the client's inputResponses, and tells its current round when the upstream either
// finished or is waiting on questions only the client can answer.

import { randomUUID } from 'node:crypto';
import type { CausewayError } from '../errors.js';
import type { JsonObject, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId } from '../jsonrpc.js';
import { toAsk, validAnswer, type Ask } from './asks.js';
import type { ResumeClaims } from './request-state.js';

export type Outcome =
  | { kind: 'done'; response: JsonRpcResponse }
  | { kind: 'failed'; error: unknown }
  | { kind: 'input'; asks: Ask[] }
  /** A call held as a task reported progress: it works now, so it is a task from here on. */
  | { kind: 'working' }
  /** Neither an answer nor a round within the wait's timeout. */
  | { kind: 'timeout' };

/** A legacy call running upstream, as the tasks bridge takes it over. */
export interface RunningCall {
  /** The call's upstream JSON-RPC id, once sent. */
  readonly upstreamId: RequestId | undefined;
  /** The upstream's answer; rejects when the call failed or was stopped. */
  readonly response: Promise<JsonRpcResponse>;
  /** From now on the call's questions go to `to`, starting with those not answered yet. */
  divertAsks(to: (r: JsonRpcRequest) => void): void;
  /** Stops the call: cancelled upstream, or only let go when `reason` is a CallDetached. */
  stop(reason: unknown): void;
}

/**
 * A call held as a task for its tool's taskSupport: its first questions come as input_required
 * rounds, and once it works (reports progress, or asks nothing for firstAskMs, or is over) the
 * tasks bridge takes it over and answers the task's CreateTaskResult. With `asksInTask` a first
 * question is no round: the task is made on it, and it is the task's.
 */
export interface HeldAsTask {
  firstAskMs: number;
  /**
   * The tool may run as a plain call (taskSupport optional): a question that comes before it
   * works is the task's own inputRequests, not a round before the task.
   */
  asksInTask: boolean;
  /** The life of the task, and so of the call. */
  ttlMs: number;
  handover(call: RunningCall): Promise<JsonObject>;
}

/** Sends one answer to an upstream ask. */
export type AnswerSink = (upstreamId: string | number, result: JsonObject) => void;

/** Where the call's progress and log notifications go during the current round. */
export interface RoundListener {
  onProgress(n: JsonRpcNotification): void;
  onLog(n: JsonRpcNotification): void;
}

// Most calls never ask: until one does, a PendingCall is a few fields (no id, no promise, no timer).
export class PendingCall {
  private callId: string | undefined;
  round = 0;
  /** Asks sent to the client and not yet answered upstream, by key. */
  private readonly outstanding = new Map<string, Ask>();
  /** Answers the client gave, by key: they also answer repeated and later asks. */
  private answers: Record<string, JsonObject> = {};
  private outcome: { kind: 'done'; response: JsonRpcResponse } | { kind: 'failed'; error: unknown } | undefined;
  private lastAskAt = 0;
  private wake: (() => void) | undefined;
  private expiry: NodeJS.Timeout | undefined;
  listener: RoundListener | undefined;
  /** Set by the owner: abort the upstream call. */
  cancel: () => void = () => undefined;
  /** Set by the owner: let go of the upstream call without cancelling it (another replica may resume it). */
  detach: () => void = () => undefined;
  refusal: CausewayError | undefined;
  /** The upstream call's id and progress token, and sessionDigest of its session: set by the owner. */
  upstream: { id: RequestId; token: string | undefined; session: string | undefined } | undefined;
  /** The ids of the last two events read on the call's stream; any event without an id makes the call not resumable. */
  private lastEventId: string | undefined;
  private previousEventId: string | undefined;
  private unnamedEvent = false;
  private overNow: (() => void) | undefined;
  private overPromise: Promise<void> | undefined;

  private digestText: string | undefined;
  /** Set when the call is held as a task for its tool's taskSupport. */
  asTask: HeldAsTask | undefined;
  /** Progress came on the call's stream. */
  private worked = false;
  /** Where the call's questions go once a task holds it. */
  private diverted: ((r: JsonRpcRequest) => void) | undefined;

  constructor(
    readonly principal: string,
    readonly method: string,
    private readonly digestOf: () => string,
    private readonly sink: AnswerSink,
  ) {}

  /** The id a sealed state names the call by, made when first asked for. */
  get id(): string {
    return (this.callId ??= randomUUID());
  }

  /** Settles once the upstream call is over (answered, failed, refused). */
  get over(): Promise<void> {
    this.overPromise ??= this.outcome ? Promise.resolve() : new Promise<void>((resolve) => (this.overNow = resolve));
    return this.overPromise;
  }

  /** The original params' digest, worked out only when a round is sealed. */
  get digest(): string {
    return (this.digestText ??= this.digestOf());
  }

  /** An event arrived on the call's stream (before its messages are routed). */
  event(id: string | undefined): void {
    if (id === undefined) this.unnamedEvent = true;
    this.previousEventId = this.lastEventId;
    this.lastEventId = id;
  }

  /**
   * What another replica needs to take the call up on its stream, or undefined when the stream
   * cannot be resumed (no session id, events without ids, no event before the first ask).
   */
  resumePoint(): ResumeClaims | undefined {
    const first = this.outstanding.values().next().value;
    const u = this.upstream;
    if (
      !u ||
      u.session === undefined ||
      this.unnamedEvent ||
      this.lastEventId === undefined ||
      first?.before === undefined
    )
      return undefined;
    return {
      s: u.session,
      i: u.id,
      ...(u.token === undefined ? {} : { k: u.token }),
      l: first.before,
      t: this.lastEventId,
      q: [...this.outstanding.values()].map((a) => a.upstreamId),
    };
  }

  /** The call upstream (its session's digest and JSON-RPC id), when it runs on a session. */
  origin(): Pick<ResumeClaims, 's' | 'i'> | undefined {
    const u = this.upstream;
    return u?.session === undefined ? undefined : { s: u.session, i: u.id };
  }

  /** The failure that ended the call, if it failed. */
  get failure(): unknown {
    return this.outcome?.kind === 'failed' ? this.outcome.error : undefined;
  }

  /** An ask arrived on the upstream stream. */
  ask(r: JsonRpcRequest): void {
    const ask: Ask = { ...toAsk(r, new Set(this.outstanding.keys())), before: this.previousEventId, request: r };
    const given = this.answers[ask.key];
    if (given !== undefined && validAnswer(r.method, given)) {
      this.sink(r.id, given);
      return;
    }
    if (this.diverted) return this.diverted(r);
    this.outstanding.set(ask.key, ask);
    this.lastAskAt = Date.now();
    this.wake?.();
  }

  /** The upstream call failed on its own while held (not refused by capability): nothing was decided. */
  get lost(): boolean {
    return this.outcome?.kind === 'failed' && this.refusal === undefined && !this.busy;
  }

  /** Progress came on the call's stream: a call held as a task works now. */
  working(): void {
    this.worked = true;
    if (this.asTask) this.wake?.();
  }

  /** The call's questions go to `to` from now on, those still outstanding first. */
  divert(to: (r: JsonRpcRequest) => void): void {
    this.diverted = to;
    const waiting = [...this.outstanding.values()];
    this.outstanding.clear();
    for (const ask of waiting) if (ask.request) to(ask.request);
  }

  /** The upstream's answer once the call is over; its failure, if it failed. */
  async response(): Promise<JsonRpcResponse> {
    await this.over;
    if (this.outcome?.kind === 'done') return this.outcome.response;
    throw this.refusal ?? this.outcome?.error;
  }

  settle(response: JsonRpcResponse): void {
    this.outcome ??= { kind: 'done', response };
    this.overNow?.();
    this.wake?.();
  }

  fail(error: unknown): void {
    this.outcome ??= { kind: 'failed', error };
    this.overNow?.();
    this.wake?.();
  }

  /**
   * Takes a request's answers: well-formed ones for outstanding asks go upstream now, and all
   * are kept for asks still to come. A missing or ill-formed answer leaves its ask outstanding,
   * so the client gets the same question again; nothing ill-formed is passed upstream.
   */
  answer(responses: Record<string, JsonObject>): void {
    this.answers = { ...this.answers, ...responses };
    for (const [key, ask] of [...this.outstanding]) {
      const r = responses[key];
      if (r === undefined || !validAnswer(String(ask.input.method), r)) continue;
      this.outstanding.delete(key);
      this.sink(ask.upstreamId, r);
    }
  }

  /** The held call whose state this call replays (its holder was gone). */
  replayOf: string | undefined;

  /** One retry at a time per held call; a second one is a replay. */
  busy = false;

  /**
   * Waits until the call is over, until it waits on the client and no new ask came for
   * `windowMs`, or at most `timeoutMs` (the upstream is working meanwhile). One timer and one
   * listener on `signal` at a time.
   */
  async next(windowMs: number, timeoutMs: number, signal: AbortSignal): Promise<Outcome> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.refusal) return { kind: 'failed', error: this.refusal };
      if (this.outcome) return this.outcome;
      if (signal.aborted) return { kind: 'failed', error: signal.reason };
      if (this.asTask && this.worked) return { kind: 'working' };
      const now = Date.now();
      const quietFor = now - this.lastAskAt;
      if (this.outstanding.size > 0 && quietFor >= windowMs)
        return { kind: 'input', asks: [...this.outstanding.values()] };
      if (now >= deadline) return { kind: 'timeout' };
      const waitMs = this.outstanding.size > 0 ? Math.min(windowMs - quietFor, deadline - now) : deadline - now;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          this.wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        signal.addEventListener('abort', done, { once: true });
        this.wake = done;
      });
    }
  }

  /** Drops the call after `ttlMs` without a retry: the upstream call is cancelled. */
  expireAfter(ttlMs: number, onExpire: () => void): void {
    clearTimeout(this.expiry);
    this.expiry = setTimeout(() => {
      this.cancel();
      onExpire();
    }, ttlMs);
    this.expiry.unref();
  }

  stopTimer(): void {
    clearTimeout(this.expiry);
  }
}

/** The pending calls this replica holds, with bounds per principal and in total. */
export class HeldCalls {
  private readonly calls = new Map<string, PendingCall>();
  /** Ids of calls that finished, kept until their states expire, so a used state cannot start the call again. */
  private readonly finished = new Map<string, number>();
  private readonly perPrincipal = new Map<string, number>();

  /** `bounds`: the most calls held in total (maxPending) and for one principal (maxPendingPerPrincipal). */
  constructor(private readonly bounds: { maxPending: number; maxPendingPerPrincipal: number }) {}

  get size(): number {
    return this.calls.size;
  }

  hasRoom(principal: string): boolean {
    const { maxPending, maxPendingPerPrincipal } = this.bounds;
    return this.calls.size < maxPending && (this.perPrincipal.get(principal) ?? 0) < maxPendingPerPrincipal;
  }

  hold(call: PendingCall): void {
    if (this.calls.has(call.id)) return;
    this.calls.set(call.id, call);
    this.perPrincipal.set(call.principal, (this.perPrincipal.get(call.principal) ?? 0) + 1);
  }

  get(id: string): PendingCall | undefined {
    return this.calls.get(id);
  }

  wasFinished(id: string): boolean {
    const until = this.finished.get(id);
    return until !== undefined && until > Date.now();
  }

  /** Marks a state's call used without holding it (its holder is gone; the state starts one replay). */
  remember(id: string, until: number): void {
    if (until > Date.now()) this.finished.set(id, until);
  }

  /** Undoes remember() when the replay it allowed never reached the upstream (the session was gone). */
  forget(id: string): void {
    this.finished.delete(id);
  }

  release(call: PendingCall, stateExpiresAt = 0): void {
    call.stopTimer();
    const now = Date.now();
    // Only a call that handed out a state (round >= 1) can be replayed.
    if (call.round > 0 && stateExpiresAt > now) this.finished.set(call.id, stateExpiresAt);
    // One TTL for all, so insertion order is expiry order: expired entries are at the front.
    for (const [id, until] of this.finished) {
      if (until > now) break;
      this.finished.delete(id);
    }
    if (!this.calls.delete(call.id)) return;
    const n = (this.perPrincipal.get(call.principal) ?? 1) - 1;
    if (n <= 0) this.perPrincipal.delete(call.principal);
    else this.perPrincipal.set(call.principal, n);
  }

  /** Cancels every held call (shutdown). */
  cancelAll(): void {
    for (const c of [...this.calls.values()]) {
      c.cancel();
      this.release(c);
    }
  }

  /**
   * Lets go of every held call without cancelling it upstream (shutdown with a shared store): a
   * retry on another replica finds no holder and resumes the call's stream.
   */
  detachAll(): void {
    for (const c of [...this.calls.values()]) {
      c.detach();
      this.release(c);
    }
  }
}
