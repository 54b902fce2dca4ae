// Tasks bridge [SEP-2663]. A task is recorded in the task store under an id of Causeway's, bound
// to the principal, so that any replica answers tasks/get, tasks/update and tasks/cancel on the
// pooled upstream session the task lives on. It is either
// - the upstream's own 2025-11-25 task [L-TASKS]: a tools/call it answered with a legacy
//   CreateTaskResult. The replica that created it follows it (legacy tasks/result, which carries
//   the upstream's asks and then the outcome) and records both; any replica that finds it over
//   upstream, or waiting on an ask nobody recorded, takes it up itself; or
// - a call Causeway holds itself (upstream.taskTools): held.ts.
// Either way any replica answers an ask (tasks/update) by sending the JSON-RPC response on the
// task's session, under the upstream's id of the ask.

import { randomUUID } from 'node:crypto';
import {
  declares,
  isoTime,
  isTerminal,
  requiredCapability,
  serverInfoOf,
  taskStatusOf,
  timesOf,
} from '../dialect/index.js';
import { causewayError, type CausewayError } from '../errors.js';
import {
  isErrorResponse,
  isObject,
  type JsonObject,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { ASK_METHODS, toAsk, validAnswer, type RunningCall } from '../mrtr/index.js';
import { sessionRef, type SessionPool } from '../pool/index.js';
import {
  CallDetached,
  refuseAsk,
  tracedRequest,
  type IdMinter,
  type SessionRef,
  type UpstreamSessionClient,
} from '../upstream/index.js';
import { HeldTasks, HolderDraining, type FollowedTask, type HeldCall } from './held.js';
import type { TaskStore } from './store.js';
import {
  ASK_PREFIX,
  detailed,
  envelope,
  fromFields,
  outcomeOf,
  RECORD_MARGIN_MS,
  toFields,
  type Outcome,
  type PendingAsk,
  type TaskNow,
  type TaskOrigin,
  type TaskRecord,
  type UpstreamView,
} from './record.js';

export interface TaskBridgeOptions {
  /** The life Causeway asks the upstream to give a task, and keeps one whose upstream set none. */
  ttlMs: number;
  /** Most tasks this replica follows at once, in all and per principal. */
  maxFollowed: number;
  maxFollowedPerPrincipal: number;
  /** How often the holder of a call run as a task says it is alive; silent four times as long, it is gone. */
  heartbeatMs: number;
  /** How long a call held as a task for its taskSupport may ask its first questions as rounds. */
  firstAskMs: number;
}

export interface TaskBridgeDeps {
  store: TaskStore;
  pool: SessionPool;
  ids: IdMinter;
  clientOf(upstream: string): UpstreamSessionClient;
  /** A task of `principal` changed (an ask, an answer, its end): notifications/tasks for its listeners. */
  announce(principal: string, n: JsonRpcNotification): void;
  log: Logger;
}

const TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export class TaskBridge {
  /** Tasks this replica follows (upstream tasks) or holds (calls), by task id. */
  private readonly followed = new Map<string, FollowedTask>();
  private readonly held: HeldTasks;

  constructor(
    private readonly deps: TaskBridgeDeps,
    private readonly opts: TaskBridgeOptions,
  ) {
    this.held = new HeldTasks(
      {
        ...deps,
        followed: this.followed,
        recordAsk: (task, ref, r, taken) => this.recordAsk(task, ref, r, taken),
        conclude: (task, view, response, lostWhy, code) => this.conclude(task, view, response, lostWhy, code),
        announce: (task, now) => this.announce(task, now),
      },
      opts,
    );
  }

  /** The ttl Causeway asks of the upstream for a task. */
  get ttlMs(): number {
    return this.opts.ttlMs;
  }

  /** How long a call held as a task for its taskSupport may ask its first questions as rounds. */
  get firstAskMs(): number {
    return this.opts.firstAskMs;
  }

  get followedCount(): number {
    return this.followed.size;
  }

  /** Whether this replica may follow one more task for `principal`. */
  hasRoom(principal: string): boolean {
    if (this.followed.size >= this.opts.maxFollowed) return false;
    let mine = 0;
    for (const f of this.followed.values()) if (f.principal === principal) mine++;
    return mine < this.opts.maxFollowedPerPrincipal;
  }

  /** The legacy task a tools/call created, recorded and followed: its 2026 CreateTaskResult. */
  async created(origin: TaskOrigin, legacyTask: JsonObject): Promise<JsonObject> {
    const times = timesOf(legacyTask);
    if (times.ttlMs === null) times.ttlMs = this.opts.ttlMs;
    const record: TaskRecord = {
      id: randomUUID(),
      upstream: origin.upstream,
      key: origin.key,
      principal: origin.principal,
      upstreamTaskId: legacyTask.taskId as string,
      createdAt: isoTime(legacyTask.createdAt),
      times,
      asks: new Map(),
    };
    // Durable before the client hears of it [SEP-2663]: a tasks/get right after must find it.
    await this.deps.store.createTask(record.id, toFields(record), times.ttlMs + RECORD_MARGIN_MS);
    this.follow(record);
    const status = taskStatusOf(legacyTask.status) ?? 'working';
    return {
      resultType: 'task',
      ...envelope(record, {
        status: status === 'input_required' ? 'working' : status,
        ...(typeof legacyTask.statusMessage === 'string' ? { statusMessage: legacyTask.statusMessage } : {}),
        lastUpdatedAt: isoTime(legacyTask.lastUpdatedAt),
      }),
    };
  }

  /** A tools/call Causeway runs as a task itself (held.ts); its CreateTaskResult at once. */
  runHere(origin: TaskOrigin, call: HeldCall, log: Logger): Promise<JsonObject> {
    return this.held.runHere(origin, call, log);
  }

  /** A call already running upstream, taken over as a task held here (held.ts); its CreateTaskResult. */
  adopt(origin: TaskOrigin, call: RunningCall, log: Logger): Promise<JsonObject> {
    return this.held.adopt(origin, call, log);
  }

  /** The upstream a task of `principal` lives on, for a federated mount's routing. */
  async upstreamOf(principal: string, taskId: string): Promise<string | undefined> {
    return (await this.read(principal, taskId))?.upstream;
  }

  /** tasks/get: the DetailedTask [XT-SPEC]. */
  async get(upstream: string, principal: string, taskId: string): Promise<JsonObject> {
    const task = await this.load(upstream, principal, taskId);
    if (task.outcome) return detailed(task, task.outcome);
    if (task.upstreamTaskId === undefined) return detailed(task, await this.held.now(task));
    const view = await this.deps.pool.withSession(task.key, (s) => this.upstreamView(task, sessionRef(s)));
    if (view === 'lost' || isTerminal(view.status)) return detailed(task, await this.conclude(task, view));
    if (task.asks.size > 0) {
      const inputRequests: JsonObject = {};
      for (const [key, ask] of task.asks) inputRequests[key] = ask.input;
      return detailed(task, {
        status: 'input_required',
        statusMessage: view.statusMessage,
        lastUpdatedAt: view.lastUpdatedAt,
        inputRequests,
      });
    }
    // Waiting on an ask nobody recorded: whoever followed the task is gone, so follow it here.
    if (view.status === 'input_required' && !this.followed.has(task.id)) this.follow(task);
    return detailed(task, { status: 'working', statusMessage: view.statusMessage, lastUpdatedAt: view.lastUpdatedAt });
  }

  /**
   * tasks/update: each well-formed answer to a pending ask goes upstream, once whichever replica
   * takes it; unknown or already answered keys, and answers of the wrong shape, are ignored [XT-SPEC].
   */
  async update(upstream: string, principal: string, taskId: string, inputResponses: JsonObject): Promise<void> {
    const task = await this.load(upstream, principal, taskId);
    if (task.outcome) return;
    const answers = Object.entries(inputResponses).flatMap(([key, answer]) => {
      const ask = task.asks.get(key);
      return ask && validAnswer(ask.input.method as string, answer) ? [{ key, ask, answer }] : [];
    });
    if (answers.length === 0) return;
    await this.deps.pool.withSession(task.key, async (s) => {
      const ref = sessionRef(s);
      const client = this.deps.clientOf(task.upstream);
      for (const { key, ask, answer } of answers) {
        if ((await this.deps.store.dropTaskFields(task.id, [ASK_PREFIX + key])) !== 1) continue;
        try {
          await client.respond(ref, { jsonrpc: '2.0', id: ask.id, result: answer });
        } catch (err) {
          // Not delivered: the question is pending again, for this client's next try.
          await this.deps.store.setTaskFields(task.id, { [ASK_PREFIX + key]: JSON.stringify(ask) });
          throw err;
        }
      }
    });
    await this.deps.store.setTaskFields(task.id, { m: new Date().toISOString() });
    await this.announceAsks(task.id, principal);
  }

  /**
   * tasks/cancel: asked of the upstream, which may still finish the task otherwise; the ack is the same for a task
   * already over [XT-SPEC].
   */
  async cancel(upstream: string, principal: string, taskId: string): Promise<void> {
    const task = await this.load(upstream, principal, taskId);
    if (task.outcome) return;
    if (task.upstreamTaskId === undefined) return this.held.cancel(task);
    const request: JsonRpcRequest = {
      jsonrpc: '2.0',
      id: this.deps.ids.requestId(),
      method: 'tasks/cancel',
      params: { taskId: task.upstreamTaskId },
    };
    const r = await this.deps.pool.withSession(task.key, (s) =>
      tracedRequest(this.deps.clientOf(task.upstream), sessionRef(s), request, {}),
    );
    // -32602: over already, or unknown upstream; the next tasks/get says which.
    if (isErrorResponse(r) && r.error.code !== -32602)
      this.deps.log.debug({ code: r.error.code }, 'upstream refused tasks/cancel');
  }

  /**
   * Drain: upstream tasks are let go without cancelling anything (another replica takes them up);
   * a held call cannot be taken up elsewhere, so it is cancelled upstream and its task fails.
   */
  detachAll(): void {
    for (const f of this.followed.values()) f.stop.abort(f.held ? new HolderDraining() : new CallDetached());
    this.followed.clear();
  }

  /** Follows the task on its upstream's tasks/result stream: records each ask, then the outcome. */
  private follow(task: TaskRecord): void {
    const stop = new AbortController();
    this.followed.set(task.id, { principal: task.principal, stop, held: false });
    const log = this.deps.log;
    void this.deps.pool
      .withSession(task.key, async (s) => {
        const ref = sessionRef(s);
        const taken = new Set(task.asks.keys());
        const request: JsonRpcRequest = {
          jsonrpc: '2.0',
          id: this.deps.ids.requestId(),
          method: 'tasks/result',
          params: { taskId: task.upstreamTaskId! },
        };
        const handlers = { onServerRequest: (r: JsonRpcRequest) => void this.recordAsk(task, ref, r, taken) };
        const response = await tracedRequest(
          this.deps.clientOf(task.upstream),
          ref,
          request,
          handlers,
          stop.signal,
          undefined,
          task.times.ttlMs ?? this.opts.ttlMs,
        );
        await this.conclude(task, await this.upstreamView(task, ref), response);
      })
      .catch((err: unknown) => {
        if (!(stop.signal.reason instanceof CallDetached))
          log.debug({ err }, 'following an upstream task ended early; tasks/get takes it up');
      })
      .finally(() => {
        if (this.followed.get(task.id)?.stop === stop) this.followed.delete(task.id);
      });
  }

  /**
   * One ask of the upstream for the task: kept for tasks/get, or refused when the creating request could not answer it.
   */
  private async recordAsk(task: TaskRecord, ref: SessionRef, r: JsonRpcRequest, taken: Set<string>): Promise<void> {
    const client = this.deps.clientOf(task.upstream);
    const params = isObject(r.params) ? r.params : undefined;
    const needs = requiredCapability(r.method, params);
    try {
      if (!(ASK_METHODS as readonly string[]).includes(r.method)) {
        await refuseAsk(client, ref, r, `${r.method} is not available to a task`);
        return;
      }
      if (needs && !declares(task.key.legacyCapabilities, needs)) {
        await refuseAsk(client, ref, r, `the client did not declare the capability ${r.method} needs`);
        return;
      }
      const ask = toAsk(r, taken);
      taken.add(ask.key);
      const pending: PendingAsk = { id: r.id, input: ask.input };
      await this.deps.store.setTaskFields(task.id, {
        [ASK_PREFIX + ask.key]: JSON.stringify(pending),
        m: new Date().toISOString(),
      });
      await this.announceAsks(task.id, task.principal);
    } catch (err) {
      this.deps.log.warn({ err }, 'an upstream task asked the client and the ask could not be recorded');
    }
  }

  /** The task is over (or lost): its outcome, kept in the store by whoever knows it first. */
  private async conclude(
    task: TaskRecord,
    view: UpstreamView,
    response?: JsonRpcResponse,
    lostWhy = 'The upstream no longer knows this task (its session ended)',
    code = -32603,
  ): Promise<Outcome> {
    let outcome: Outcome;
    if (view === 'lost') {
      outcome = { status: 'failed', lastUpdatedAt: new Date().toISOString(), error: { code, message: lostWhy } };
    } else if (view.status === 'cancelled') {
      outcome = { status: 'cancelled', statusMessage: view.statusMessage, lastUpdatedAt: view.lastUpdatedAt };
    } else {
      const r =
        response ?? (await this.deps.pool.withSession(task.key, (s) => this.upstreamResult(task, sessionRef(s))));
      outcome = outcomeOf(view, r, await this.serverInfo(task));
    }
    if (!(await this.deps.store.setTaskFieldOnce(task.id, 'f', JSON.stringify(outcome)))) {
      const first = await this.deps.store.readTask(task.id);
      return first?.f === undefined ? outcome : (JSON.parse(first.f) as Outcome);
    }
    this.announce(task, outcome);
    return outcome;
  }

  /** The task's asks changed: input_required with those still pending, or working again once none is. */
  private async announceAsks(taskId: string, principal: string): Promise<void> {
    const task = await this.read(principal, taskId);
    if (!task || task.outcome) return;
    const inputRequests: JsonObject = {};
    for (const [key, ask] of task.asks) inputRequests[key] = ask.input;
    const lastUpdatedAt = new Date().toISOString();
    this.announce(
      task,
      task.asks.size > 0
        ? { status: 'input_required', lastUpdatedAt, inputRequests }
        : { status: 'working', lastUpdatedAt },
    );
  }

  private announce(task: TaskRecord, now: TaskNow): void {
    const { resultType: _rt, ...params } = detailed(task, now);
    void _rt;
    this.deps.announce(task.principal, { jsonrpc: '2.0', method: 'notifications/tasks', params });
  }

  private upstreamResult(task: TaskRecord, ref: SessionRef): Promise<JsonRpcResponse> {
    const request: JsonRpcRequest = {
      jsonrpc: '2.0',
      id: this.deps.ids.requestId(),
      method: 'tasks/result',
      params: { taskId: task.upstreamTaskId! },
    };
    return tracedRequest(this.deps.clientOf(task.upstream), ref, request, {});
  }

  private async upstreamView(task: TaskRecord, ref: SessionRef): Promise<UpstreamView> {
    const request: JsonRpcRequest = {
      jsonrpc: '2.0',
      id: this.deps.ids.requestId(),
      method: 'tasks/get',
      params: { taskId: task.upstreamTaskId! },
    };
    const r = await tracedRequest(this.deps.clientOf(task.upstream), ref, request, {});
    if (isErrorResponse(r)) {
      if (r.error.code === -32602) return 'lost';
      throw causewayError('upstream_bad_response', `The upstream refused tasks/get: ${r.error.message}`);
    }
    const status = taskStatusOf(r.result.status);
    if (!status) throw causewayError('upstream_bad_response', 'The upstream answered tasks/get without a task status');
    return {
      status,
      ...(typeof r.result.statusMessage === 'string' ? { statusMessage: r.result.statusMessage } : {}),
      lastUpdatedAt: isoTime(r.result.lastUpdatedAt),
    };
  }

  private async serverInfo(task: TaskRecord): Promise<JsonObject | undefined> {
    return serverInfoOf((await this.deps.pool.acquire(task.key)).record.initializeResult);
  }

  private async read(principal: string, taskId: string): Promise<TaskRecord | undefined> {
    if (!TASK_ID.test(taskId)) return undefined;
    const fields = await this.deps.store.readTask(taskId);
    const task = fields && fromFields(taskId, fields);
    // Another principal's task is as unknown as a task that never was.
    return task && task.principal === principal ? task : undefined;
  }

  private async load(upstream: string, principal: string, taskId: string): Promise<TaskRecord> {
    const task = await this.read(principal, taskId);
    if (!task || task.upstream !== upstream) throw unknownTask(taskId);
    return task;
  }
}

function unknownTask(taskId: string): CausewayError {
  return causewayError('invalid_params', `Unknown or expired task: ${taskId}`);
}
