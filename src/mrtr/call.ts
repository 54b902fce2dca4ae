// One relayed call of the multi-round bridge [MRTR] and its rounds: started upstream (or taken
// up on its upstream stream after event l, when a retry resumes it), its asks gathered into a
// round that is sealed into a requestState, or its result once it has one. A 2025-11-25 -32042
// becomes a url-mode round. Where a retry's call is (here, elsewhere, gone) is retry.ts's to decide.

import { declares, requiredCapability } from '../dialect/index.js';
import { causewayError } from '../errors.js';
import {
  isErrorResponse,
  isObject,
  type JsonObject,
  type JsonRpcNotification,
  type JsonRpcResponse,
  type RequestId,
} from '../jsonrpc.js';
import type { Logger } from '../log.js';
import {
  CallDetached,
  lendSignal,
  refuseAsk,
  relayCall,
  resumeRelayedCall,
  SessionExpiredError,
  type CallObserver,
  type IdMinter,
  type SessionRef,
  type UpstreamSessionClient,
} from '../upstream/index.js';
import { levelAtLeast, type ModernRequest } from '../envelope/index.js';
import type { Handoff, RoundOutcome } from './handoff.js';
import {
  PendingCall,
  type HeldAsTask,
  type HeldCalls,
  type Outcome,
  type RoundListener,
  type RunningCall,
} from './holder.js';
import { paramsDigest, sessionDigest, type ResumeClaims, type StateClaims, type StateSealer } from './request-state.js';
import { activeTraceparent } from '../tracing/index.js';
import type { RetryVia } from '../metrics/index.js';

/** What the bridges of every upstream share on one replica. */
export interface ReplicaBridge {
  replicaId: string;
  /** Hands retries to the replica holding their call; absent on a single replica. */
  handoff: Handoff | undefined;
  ids: IdMinter;
  held: HeldCalls;
  sealer: StateSealer;
  collectWindowMs: number;
  stateTtlMs: number;
}

/** One upstream's bridge. */
export interface BridgeDeps extends ReplicaBridge {
  client: UpstreamSessionClient;
  /** The upstream's own request timeout, for the stretches where the upstream is working. */
  upstreamTimeoutMs: number;
  /** Told how each retry carrying a requestState is served. */
  onRetry?(method: string, via: RetryVia): void;
}

export interface RoundExchange {
  request: ModernRequest;
  principal: string;
  signal: AbortSignal;
  log: Logger;
  /** Receives this round's progress / log notifications (already filtered and re-tokened). */
  send(n: JsonRpcNotification): void;
  /** Any other notification on the call's stream (list_changed, resources/updated), for the session's listeners. */
  onChange?(n: JsonRpcNotification): void;
  /** The request is a retry answering round `round` (its requestState opened and is this request's). */
  onRetry?(round: number): void;
  upstreamHeaders: Record<string, string>;
  /** The call is held as a task once it works: its questions before that come as rounds. */
  asTask?: HeldAsTask;
}

export type RoundResult = RoundOutcome<JsonRpcResponse>;

/**
 * The upstream progress token of a call held as a task whose client asked for no progress: its
 * progress tells that the call works, and goes nowhere else.
 */
const WORK_TOKEN = 'causeway/works';

/** A call a retry takes up on its upstream stream, from where its sealed state says it stood. */
interface Resuming {
  at: ResumeClaims;
  /** Called on the first outstanding ask the resumed stream carries. */
  attached(): void;
}

/** Sends the call upstream, or follows it on its upstream stream when `resuming`; a PendingCall gathers what comes. */
export function start(
  ex: RoundExchange,
  session: SessionRef,
  deps: BridgeDeps,
  digestOf: () => string,
  resuming?: Resuming,
): PendingCall {
  const { request } = ex;
  const abort = new AbortController();
  // The call's one signal: its CallScope aborts it on a deadline instead of making another.
  const signal = lendSignal(abort);
  const { pending, observer } = watch(
    ex,
    session,
    deps,
    digestOf,
    { cancel: () => abort.abort(), detach: () => abort.abort(new CallDetached()) },
    resuming,
  );
  const progressToken = request.meta.progressToken ?? (ex.asTask ? WORK_TOKEN : undefined);
  const timeoutMs = heldCallTimeoutMs(deps, ex.asTask);
  const at = resuming?.at;
  let run: Promise<JsonRpcResponse>;
  if (at !== undefined) {
    pending.upstream = upstreamOf(session, at.i, at.k);
    // The stream is taken up after event l: that is where the call's cursor stands.
    pending.event(at.l);
    run = resumeRelayedCall(
      deps.client,
      session,
      { id: at.i, upstreamToken: at.k, lastEventId: at.l },
      { progressToken, timeoutMs },
      observer,
      ex.log,
      signal,
    );
  } else {
    run = relayCall(
      deps.client,
      session,
      deps.ids,
      { method: request.method, params: request.params, progressToken, headers: ex.upstreamHeaders, timeoutMs },
      observer,
      ex.log,
      signal,
    );
  }
  run.then(
    (response) => pending.settle(response),
    (err: unknown) => pending.fail(err),
  );
  return pending;
}

/**
 * Held between rounds, a call waits on a person: it may live as long as its state. Held as a
 * task, as long as the task.
 */
export function heldCallTimeoutMs(
  deps: Pick<BridgeDeps, 'stateTtlMs' | 'upstreamTimeoutMs'>,
  asTask?: HeldAsTask,
): number {
  return Math.max(deps.stateTtlMs + deps.upstreamTimeoutMs, asTask?.ttlMs ?? 0);
}

/**
 * How the owner of a call's upstream request stops it: cancelled upstream, or only let go (another replica may resume
 * it).
 */
export interface CallStop {
  cancel(): void;
  detach(): void;
}

/** The ids of the events a call read before it was held: the last two, and whether one had none. */
export interface EventIds {
  previous: string | undefined;
  last: string | undefined;
  unnamed: boolean;
  count: number;
}

/** `seen` with one more event read; made with the first (a JSON answer has none). */
export function eventRead(seen: EventIds | undefined, id: string | undefined): EventIds {
  const e = seen ?? { previous: undefined, last: undefined, unnamed: false, count: 0 };
  if (id === undefined) e.unnamed = true;
  e.previous = e.last;
  e.last = id;
  e.count += 1;
  return e;
}

/**
 * A call sent and read by its owner (the warm lane) until the upstream asked the client
 * something: held from here on as a call start() sent. `events` are the ids of the events read
 * so far (the last two, and whether one had none); the owner passes what the stream carries on to
 * the observer, and the call's end to the PendingCall (settle, fail).
 */
export function adopt(
  ex: RoundExchange,
  session: SessionRef,
  deps: BridgeDeps,
  sent: {
    id: RequestId;
    stop: CallStop;
    /** Undefined: none read. */
    events: EventIds | undefined;
  },
): { pending: PendingCall; observer: CallObserver } {
  let digest: string | undefined;
  const watched = watch(ex, session, deps, () => (digest ??= paramsDigest(ex.request.params)), sent.stop);
  const { events } = sent;
  if (events?.unnamed) watched.pending.event(undefined);
  if (events && events.count > 1) watched.pending.event(events.previous);
  if (events && events.count > 0) watched.pending.event(events.last);
  watched.observer.onIds?.(sent.id, undefined);
  return watched;
}

/** The call's upstream id and token, and its session's digest, worked out only when a round is sealed. */
function upstreamOf(session: SessionRef, id: RequestId, token: string | undefined): UpstreamCall {
  return new UpstreamCall(id, token, session.sessionId);
}

/**
 * PendingCall's `upstream`: a class, so that its getter is its prototype's (an object literal with
 * one is made a dictionary of its own, with a closure, for every call held).
 */
class UpstreamCall {
  private digest: string | undefined = undefined;

  constructor(
    readonly id: RequestId,
    readonly token: string | undefined,
    private readonly sessionId: string | undefined,
  ) {}

  get session(): string | undefined {
    return this.sessionId === undefined ? undefined : (this.digest ??= sessionDigest(this.sessionId));
  }
}

/** The PendingCall of a call, and the observer of its stream that feeds it. */
function watch(
  ex: RoundExchange,
  session: SessionRef,
  deps: BridgeDeps,
  digestOf: () => string,
  stop: CallStop,
  resuming?: Resuming,
): { pending: PendingCall; observer: CallObserver } {
  const { request } = ex;
  const pending = new PendingCall(ex.principal, request.method, digestOf, (upstreamId, result) => {
    deps.client
      .respond(session, { jsonrpc: '2.0', id: upstreamId, result })
      .catch((err: unknown) => ex.log.warn({ err }, 'answering an upstream ask failed'));
  });
  pending.cancel = stop.cancel;
  pending.detach = stop.detach;
  pending.asTask = ex.asTask;
  const sessionId = session.sessionId;
  const declared = request.meta.clientCapabilities;
  // A resumed stream first replays what the holder had read (up to event `t`): only the asks
  // outstanding at the seal count then; the rest was answered or relayed by the holder.
  const at = resuming?.at;
  const outstanding = new Set(at?.q ?? []);
  let replayed = at !== undefined;
  let atSeal = false;
  const observer: CallObserver = {
    onEvent: (id) => {
      if (replayed && atSeal) replayed = false;
      else if (replayed && id === at?.t) atSeal = true;
      pending.event(id);
    },
    onIds: (id, token) => {
      pending.upstream = upstreamOf(session, id, token);
    },
    onProgress: (n) => {
      if (replayed) return;
      pending.working();
      pending.listener?.onProgress(n);
    },
    onLog: (n) => {
      if (!replayed) pending.listener?.onLog(n);
    },
    onOtherNotification: (n) => {
      if (!replayed) ex.onChange?.(n);
    },
    onServerRequest: (r) => {
      if (replayed) {
        if (!outstanding.has(r.id)) return;
        resuming?.attached();
      }
      const required = requiredCapability(r.method, r.params);
      if (required === undefined || !declares(declared, required)) {
        refuseAsk(deps.client, session, r, `${r.method} was not declared by the client`).catch(() => undefined);
        if (required !== undefined && !pending.refusal) {
          pending.refusal = causewayError(
            'missing_client_capability',
            `The upstream needs ${r.method}, which this request did not declare`,
            {
              requiredCapabilities: required,
            },
          );
          pending.cancel();
        }
        return;
      }
      if (sessionId === undefined) {
        // Session-less (no Mcp-Session-Id at initialize): the answer would reach a fresh server
        // that never sent the request, so waiting for it only ends in upstream.requestTimeoutMs.
        refuseAsk(deps.client, session, r, `${r.method} cannot be answered without a session`).catch(() => undefined);
        pending.refusal ??= causewayError(
          'upstream_sessionless',
          `The upstream keeps no sessions, so its ${r.method} cannot be answered`,
        );
        pending.cancel();
        return;
      }
      pending.ask(r);
    },
  };
  return { pending, observer };
}

/** Where a round's progress and logs go: re-tokened, and only at the level the request asked for. */
export function listenerFor(ex: RoundExchange): RoundListener {
  const token = ex.request.meta.progressToken;
  const level = ex.request.meta.logLevel;
  return {
    onProgress: (n) => {
      if (token !== undefined && isObject(n.params))
        ex.send({ ...n, params: { ...n.params, progressToken: token as RequestId } });
    },
    onLog: (n) => {
      const l = isObject(n.params) ? n.params.level : undefined;
      if (level !== undefined && typeof l === 'string' && levelAtLeast(l, level)) ex.send(n);
    },
  };
}

/** Waits for the call's next round (sealed into a requestState, the call held until the retry) or its result. */
export async function nextRound(
  pending: PendingCall,
  deps: ReplicaBridge & { upstreamTimeoutMs: number },
  listener: RoundListener,
  signal: AbortSignal,
): Promise<RoundResult> {
  pending.busy = true;
  pending.listener = listener;
  try {
    // While a round runs the upstream is working, so its usual timeout applies; between rounds
    // the call waits on a person and only the state's TTL bounds it.
    const asTask = pending.asTask;
    const waited = await pending.next(
      deps.collectWindowMs,
      asTask ? asTask.firstAskMs : deps.upstreamTimeoutMs,
      signal,
    );
    const stateExpiry = Date.now() + deps.stateTtlMs;
    // Held as a task: once it works, asks nothing for a while, or is over, the task takes it; an
    // optional tool's first question too (only a required one asks rounds before its task).
    // (A -32042 stays a url-mode round: its retry re-issues the call.)
    const urlRound =
      waited.kind === 'done' && isErrorResponse(waited.response) && waited.response.error.code === -32042;
    const askedFirst = waited.kind === 'input' && asTask?.asksInTask === true && pending.round === 0;
    const works = waited.kind === 'working' || waited.kind === 'timeout' || (waited.kind === 'done' && !urlRound);
    if (asTask && (askedFirst || works)) {
      return { kind: 'task', created: await handOver(pending, asTask, deps, stateExpiry) };
    }
    const outcome: Outcome =
      waited.kind === 'timeout' || waited.kind === 'working'
        ? { kind: 'failed', error: causewayError('upstream_timeout') }
        : waited;
    if (outcome.kind === 'done') {
      // A call that never asked was never held: nothing to release on the common path.
      if (pending.round > 0) deps.held.release(pending, stateExpiry);
      return { kind: 'upstream', response: outcome.response };
    }
    if (outcome.kind === 'failed') {
      pending.cancel();
      if (outcome.error instanceof SessionExpiredError) {
        // The pool re-runs this round on a new session, which replays the call from these answers.
        if (pending.round > 0) deps.held.release(pending);
        if (pending.replayOf !== undefined) deps.held.forget(pending.replayOf);
      } else if (pending.round > 0) deps.held.release(pending, stateExpiry);
      throw outcome.error;
    }
    // The bound applies when a call first needs holding; check and hold with no await between.
    if (deps.held.get(pending.id) === undefined) {
      if (!deps.held.hasRoom(pending.principal)) {
        pending.cancel();
        deps.held.release(pending);
        throw causewayError('overloaded', 'Too many multi-round calls pending');
      }
      deps.held.hold(pending);
    }
    pending.round++;
    pending.expireAfter(deps.stateTtlMs, () => deps.held.release(pending, stateExpiry));
    const inputRequests: JsonObject = {};
    for (const ask of outcome.asks) inputRequests[ask.key] = ask.input;
    const requestState = deps.sealer.seal({
      p: pending.principal,
      m: pending.method,
      d: pending.digest,
      c: pending.id,
      r: pending.round,
      h: deps.replicaId,
      e: stateExpiry,
      ...resumeOrOrigin(pending),
      x: activeTraceparent(),
    });
    return { kind: 'input', result: { resultType: 'input_required', inputRequests, requestState } };
  } finally {
    pending.busy = false;
    pending.listener = undefined;
  }
}

/** What a state says of where its call runs: how to resume it, else at least which call to cancel on a replay. */
function resumeOrOrigin(pending: PendingCall): Pick<StateClaims, 'u' | 'o'> {
  const u = pending.resumePoint();
  if (u) return { u };
  const o = pending.origin();
  return o ? { o } : {};
}

/** The call goes on as a task: no longer held for rounds (its state is used up), its questions the task's. */
async function handOver(
  pending: PendingCall,
  asTask: HeldAsTask,
  deps: ReplicaBridge,
  stateExpiry: number,
): Promise<JsonObject> {
  if (pending.round > 0) deps.held.release(pending, stateExpiry);
  const running: RunningCall = {
    get upstreamId() {
      return pending.upstream?.id;
    },
    response: pending.response(),
    divertAsks: (to) => pending.divert(to),
    stop: (reason) => (reason instanceof CallDetached ? pending.detach() : pending.cancel()),
  };
  // Read or not, the answer is the task's: never an unhandled rejection.
  running.response.catch(() => undefined);
  try {
    return await asTask.handover(running);
  } catch (err) {
    pending.cancel();
    throw err;
  }
}
