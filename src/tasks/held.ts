// Calls Causeway runs as tasks itself (upstream.taskTools, or a call handed over after asking its
// first questions as rounds): the replica that took one keeps the legacy tools/call open in the
// background for up to the task's ttl, records its asks and its answer, and beats a heartbeat into
// the task's record; a task whose heartbeat stopped failed with its replica. Cancelled on any
// replica, the call is cut upstream, and its holder lets go at its next beat.

import { randomUUID } from 'node:crypto';
import { toCausewayError } from '../errors.js';
import type { JsonObject, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import type { RunningCall } from '../mrtr/index.js';
import { sessionRef, type SessionPool } from '../pool/index.js';
import {
  CallDetached,
  relayCall,
  type IdMinter,
  type SessionRef,
  type UpstreamSessionClient,
} from '../upstream/index.js';
import {
  envelope,
  RECORD_MARGIN_MS,
  toFields,
  type Outcome,
  type TaskNow,
  type TaskOrigin,
  type TaskRecord,
  type UpstreamView,
} from './record.js';
import type { TaskStore } from './store.js';

/** The legacy tools/call Causeway holds as a task. */
export interface HeldCall {
  params: JsonObject;
  headers: Record<string, string>;
}

/** A task this replica follows (an upstream task) or holds (a call), in the bridge's register. */
export interface FollowedTask {
  principal: string;
  stop: AbortController;
  held: boolean;
}

/** What a held task shares with the bridge: the register of tasks here, and how asks and ends are recorded. */
export interface HeldTaskDeps {
  store: TaskStore;
  pool: SessionPool;
  ids: IdMinter;
  clientOf(upstream: string): UpstreamSessionClient;
  followed: Map<string, FollowedTask>;
  recordAsk(task: TaskRecord, ref: SessionRef, r: JsonRpcRequest, taken: Set<string>): Promise<void>;
  conclude(
    task: TaskRecord,
    view: UpstreamView,
    response?: JsonRpcResponse,
    lostWhy?: string,
    code?: number,
  ): Promise<Outcome>;
  announce(task: TaskRecord, now: TaskNow): void;
  log: Logger;
}

export interface HeldTaskOptions {
  ttlMs: number;
  /** How often the holder says it is alive; silent four times as long, it is gone. */
  heartbeatMs: number;
}

/** Why a held call is aborted on drain: unlike CallDetached, the upstream is told to stop it. */
export class HolderDraining extends Error {
  constructor() {
    super('The replica running this task shut down; the call was cancelled');
    this.name = 'HolderDraining';
  }
}

export class HeldTasks {
  constructor(
    private readonly deps: HeldTaskDeps,
    private readonly opts: HeldTaskOptions,
  ) {}

  /** A tools/call run as a task here: recorded, then sent upstream and held; its CreateTaskResult at once. */
  async runHere(origin: TaskOrigin, call: HeldCall, log: Logger): Promise<JsonObject> {
    const record = this.newRecord(origin);
    await this.create(record);
    const ref = sessionRef(origin.session);
    this.hold(record, ref, this.send(record, ref, call, log), log);
    return { resultType: 'task', ...envelope(record, { status: 'working', lastUpdatedAt: record.createdAt }) };
  }

  /**
   * A call already running upstream (it asked its first questions as rounds) taken over as a task
   * held here: recorded with the call's upstream id, then held like runHere's; its CreateTaskResult.
   */
  async adopt(origin: TaskOrigin, call: RunningCall, log: Logger): Promise<JsonObject> {
    const record = this.newRecord(origin);
    if (call.upstreamId !== undefined) record.call = call.upstreamId;
    await this.create(record);
    this.hold(record, sessionRef(origin.session), call, log);
    return { resultType: 'task', ...envelope(record, { status: 'working', lastUpdatedAt: record.createdAt }) };
  }

  /** Where a held call stands: its asks, else working; failed once its holder stopped beating. */
  async now(task: TaskRecord): Promise<TaskNow> {
    if ((task.aliveUntil ?? 0) < Date.now()) {
      return this.deps.conclude(
        task,
        'lost',
        undefined,
        'The replica running this task is gone; the call was cut off with it',
      );
    }
    const lastUpdatedAt = task.updatedAt ?? task.createdAt;
    if (task.asks.size === 0) return { status: 'working', lastUpdatedAt };
    const inputRequests: JsonObject = {};
    for (const [key, ask] of task.asks) inputRequests[key] = ask.input;
    return { status: 'input_required', lastUpdatedAt, inputRequests };
  }

  /**
   * A held call is cancelled here, whichever replica holds it: the task ends cancelled, and the
   * upstream is told to stop the call (notifications/cancelled under its id); the holder sees
   * the end at its next heartbeat and lets go.
   */
  async cancel(task: TaskRecord): Promise<void> {
    const outcome: Outcome = {
      status: 'cancelled',
      statusMessage: 'Cancelled by the client',
      lastUpdatedAt: new Date().toISOString(),
    };
    if (!(await this.deps.store.setTaskFieldOnce(task.id, 'f', JSON.stringify(outcome)))) return;
    this.deps.announce(task, outcome);
    this.deps.followed.get(task.id)?.stop.abort(new CallDetached());
    if (task.call === undefined) return;
    const cancel: JsonRpcNotification = {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: task.call, reason: 'task cancelled' },
    };
    await this.deps.pool.withSession(task.key, (s) => this.deps.clientOf(task.upstream).notify(sessionRef(s), cancel));
  }

  private newRecord(origin: TaskOrigin): TaskRecord {
    return {
      id: randomUUID(),
      upstream: origin.upstream,
      key: origin.key,
      principal: origin.principal,
      createdAt: new Date().toISOString(),
      times: { ttlMs: this.opts.ttlMs },
      asks: new Map(),
    };
  }

  /** Durable, with its first heartbeat, before the client hears of it. */
  private create(record: TaskRecord): Promise<void> {
    return this.deps.store.createTask(
      record.id,
      { ...toFields(record), b: String(Date.now() + 4 * this.opts.heartbeatMs) },
      this.opts.ttlMs + RECORD_MARGIN_MS,
    );
  }

  /** Sends the legacy tools/call of a task held here; its upstream id goes into the record. */
  private send(task: TaskRecord, ref: SessionRef, call: HeldCall, log: Logger): RunningCall {
    const abort = new AbortController();
    let upstreamId: RequestId | undefined;
    let asks: (r: JsonRpcRequest) => void = () => undefined;
    const observer = {
      onIds: (id: RequestId) => {
        upstreamId = id;
        void this.deps.store.setTaskFields(task.id, { q: JSON.stringify(id) }).catch(() => undefined);
      },
      onServerRequest: (r: JsonRpcRequest) => asks(r),
    };
    const client = this.deps.clientOf(task.upstream);
    const timeoutMs = task.times.ttlMs ?? this.opts.ttlMs;
    const response = relayCall(
      client,
      ref,
      this.deps.ids,
      { method: 'tools/call', params: call.params, progressToken: undefined, headers: call.headers, timeoutMs },
      observer,
      log,
      abort.signal,
    );
    return {
      get upstreamId() {
        return upstreamId;
      },
      response,
      divertAsks: (to) => (asks = to),
      stop: (reason) => abort.abort(reason),
    };
  }

  /** Holds a running call as the task: asks recorded, the answer kept as the outcome, a heartbeat meanwhile. */
  private hold(task: TaskRecord, ref: SessionRef, call: RunningCall, log: Logger): void {
    const { followed, conclude } = this.deps;
    const stop = new AbortController();
    followed.set(task.id, { principal: task.principal, stop, held: true });
    stop.signal.addEventListener('abort', () => call.stop(stop.signal.reason), { once: true });
    const taken = new Set<string>();
    const beat = setInterval(() => void this.beat(task.id, stop), this.opts.heartbeatMs);
    beat.unref();
    call.divertAsks((r) => void this.deps.recordAsk(task, ref, r, taken));
    void call.response
      .then(async (response) =>
        conclude(task, { status: 'completed', lastUpdatedAt: new Date().toISOString() }, response),
      )
      .catch(async (err: unknown) => {
        if (stop.signal.reason instanceof CallDetached) return;
        if (stop.signal.reason instanceof HolderDraining)
          return void (await conclude(task, 'lost', undefined, stop.signal.reason.message));
        const e = toCausewayError(err);
        await conclude(task, 'lost', undefined, e.message, e.code);
      })
      .catch((err: unknown) => log.warn({ err }, 'the outcome of a held task could not be recorded'))
      .finally(() => {
        clearInterval(beat);
        if (followed.get(task.id)?.stop === stop) followed.delete(task.id);
      });
  }

  /** The holder is alive; a task that ended meanwhile (cancelled, expired) is let go. */
  private async beat(taskId: string, stop: AbortController): Promise<void> {
    try {
      const fields = await this.deps.store.readTask(taskId);
      if (!fields || fields.f !== undefined) stop.abort(new CallDetached());
      else await this.deps.store.setTaskFields(taskId, { b: String(Date.now() + 4 * this.opts.heartbeatMs) });
    } catch (err) {
      this.deps.log.debug({ err }, 'a held task could not beat its heartbeat');
    }
  }
}
