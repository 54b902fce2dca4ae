// The 2025-11-25 tasks a legacy client runs through the translated face, over the 2026 upstream's
// tasks extension [L-TASKS][SEP-2663]. A task-augmented tools/call goes up as a tools/call
// declaring the extension (face.ts); the CreateTaskResult it gets is answered as the legacy
// `{task}`, its id kept in the session's record first. tasks/get and tasks/cancel are the 2026
// ones, answered with the flat legacy Task; tasks/list, which 2026 has not, lists the session's
// own tasks from its record; tasks/result, which 2026 has not either, polls the 2026 tasks/get at
// the task's pollIntervalMs until the task ends, putting its inputRequests to the client as the
// server->client requests of a tasks/result stream and sending the answers up with tasks/update.
// A session touches only the tasks created through it: any other id is unknown (-32602).

import { setTimeout as delay } from 'node:timers/promises';
import { isTerminal, legacyTaskFrom, taskStatusOf } from '../dialect/index.js';
import { CausewayError, causewayError } from '../errors.js';
import { isObject, type JsonObject, type JsonRpcErrorObject, type JsonRpcResponse } from '../jsonrpc.js';
import type { FactsStore, Session } from './sessions.js';

/** Task ids a session keeps for its tasks/list; past it the oldest go. */
const MAX_TASKS = 1_000;
/** Tasks one tasks/list page holds: each is one tasks/get upstream, LIST_AT_ONCE at a time. */
const PAGE = 20;
const LIST_AT_ONCE = 5;
/** tasks/result polls at the task's pollIntervalMs, within these bounds; at the default when it gives none. */
const POLL_MS = { min: 50, max: 5_000, default: 1_000 } as const;

/** One legacy tasks request as the face hands it over: its session, the upstream, the client. */
export interface TaskRequest {
  session: Session;
  /** One 2026 request upstream, with the session's `_meta` and the tasks extension declared; `name` is its Mcp-Name. */
  send(method: string, params: JsonObject, name: string): Promise<JsonRpcResponse>;
  /** Puts a task's asks to the client on the request's stream: the answers, by key. */
  ask(asks: JsonObject): Promise<JsonObject>;
  /** Told that the request will wait (tasks/result): its stream may start, kept alive. */
  waiting(): void;
  signal: AbortSignal;
}

/** A legacy answer: a result, or a JSON-RPC error as the task's call would have answered it. */
export type TaskAnswer = { result: JsonObject } | { error: JsonRpcErrorObject };

function unknownTask(taskId: unknown): Error {
  return causewayError('unknown_name', `Unknown or expired task: ${String(taskId)}`);
}

/** An upstream tasks/* answer's result; its -32602 is the task unknown, any other error the upstream's fault. */
function resultOf(response: JsonRpcResponse, method: string, taskId: string): JsonObject {
  if (!('error' in response)) return response.result;
  if (response.error.code === -32602) throw unknownTask(taskId);
  const said = response.error.message.slice(0, 200);
  throw causewayError('upstream_bad_response', `The upstream refused ${method}: ${said}`);
}

/** The answer a task ended with: its result, its error, or the error a cancelled task's tasks/result gets. */
function outcomeOf(taskId: string, task: JsonObject): TaskAnswer {
  if (task.status === 'completed') return { result: isObject(task.result) ? task.result : {} };
  const error = task.error;
  const { code, message, data } = isObject(error) ? error : {};
  if (task.status === 'failed' && typeof code === 'number' && typeof message === 'string') {
    return { error: { code, message, ...(data === undefined ? {} : { data }) } };
  }
  const said = typeof task.statusMessage === 'string' ? `: ${task.statusMessage}` : '';
  const ended = task.status === 'cancelled' ? 'was cancelled' : 'failed';
  return { error: { code: -32603, message: `Task ${taskId} ${ended}${said}` } };
}

export class LegacyTasks {
  constructor(private readonly facts: FactsStore) {}

  /** A 2026 CreateTaskResult as the legacy `{task}`; the task is the session's before the client hears of it. */
  async created(session: Session, result: JsonObject): Promise<JsonObject> {
    const task = legacyTaskFrom(result);
    if (task === undefined) throw causewayError('upstream_bad_response', 'The upstream answered a task with no id');
    const taskId = task.taskId as string;
    await this.facts.update(session.id, (r) => ({ ...r, tasks: [...(r.tasks ?? []), taskId].slice(-MAX_TASKS) }));
    return { task };
  }

  /** tasks/get, tasks/result, tasks/list and tasks/cancel of the session. */
  async answer(req: TaskRequest, method: string, params: JsonObject): Promise<TaskAnswer> {
    switch (method) {
      case 'tasks/get':
        return { result: legacyTaskFrom(await this.detailed(req, this.own(req, params)))! };
      case 'tasks/result':
        return this.result(req, this.own(req, params));
      case 'tasks/list':
        return { result: await this.list(req, params) };
      case 'tasks/cancel':
        return { result: await this.cancel(req, this.own(req, params)) };
      default:
        throw causewayError('method_not_found', `${method} is no method of the 2025-11-25 tasks`);
    }
  }

  /** The task id the request names, when the task is this session's. */
  private own(req: TaskRequest, params: JsonObject): string {
    const taskId = params.taskId;
    if (typeof taskId !== 'string') throw causewayError('invalid_params', 'tasks requests need params.taskId');
    if (!(req.session.record.tasks ?? []).includes(taskId)) throw unknownTask(taskId);
    return taskId;
  }

  /** The upstream's DetailedTask; unknown when the upstream no longer knows it. */
  private async detailed(req: TaskRequest, taskId: string): Promise<JsonObject> {
    const task = resultOf(await req.send('tasks/get', { taskId }, taskId), 'tasks/get', taskId);
    if (legacyTaskFrom(task) === undefined) {
      throw causewayError('upstream_bad_response', 'The upstream answered tasks/get with no task');
    }
    return task;
  }

  /** Blocks until the task ends: its asks put to the client as they come, its outcome answered. */
  private async result(req: TaskRequest, taskId: string): Promise<TaskAnswer> {
    const asked = new Set<string>();
    for (;;) {
      const task = await this.detailed(req, taskId);
      const status = taskStatusOf(task.status)!;
      if (isTerminal(status)) return outcomeOf(taskId, task);
      const asks: JsonObject = {};
      if (status === 'input_required' && isObject(task.inputRequests)) {
        // Keys are the task's for its whole life [SEP-2663]: one asked here is not asked again.
        for (const [key, ask] of Object.entries(task.inputRequests)) if (!asked.has(key)) asks[key] = ask;
      }
      if (Object.keys(asks).length > 0) {
        for (const key of Object.keys(asks)) asked.add(key);
        const inputResponses = await req.ask(asks);
        resultOf(await req.send('tasks/update', { taskId, inputResponses }, taskId), 'tasks/update', taskId);
        continue;
      }
      req.waiting();
      const poll = typeof task.pollIntervalMs === 'number' ? task.pollIntervalMs : POLL_MS.default;
      await delay(Math.min(POLL_MS.max, Math.max(POLL_MS.min, poll)), undefined, { signal: req.signal });
    }
  }

  /** The session's tasks, oldest first, as the upstream has them now: those it no longer knows left out. */
  private async list(req: TaskRequest, params: JsonObject): Promise<JsonObject> {
    const ids = req.session.record.tasks ?? [];
    const cursor = params.cursor;
    if (cursor !== undefined && (typeof cursor !== 'string' || !/^\d{1,6}$/.test(cursor))) {
      throw causewayError('invalid_params', 'tasks/list: the cursor is not one this server gave');
    }
    const start = cursor === undefined ? 0 : Number(cursor);
    const tasks: JsonObject[] = [];
    // A few at a time: each holds a listener on the request's signal.
    for (let i = start; i < Math.min(ids.length, start + PAGE); i += LIST_AT_ONCE) {
      const batch = ids.slice(i, Math.min(i + LIST_AT_ONCE, start + PAGE));
      for (const task of await Promise.all(batch.map((taskId) => this.known(req, taskId)))) if (task) tasks.push(task);
    }
    const next = start + PAGE < ids.length ? { nextCursor: String(start + PAGE) } : {};
    return { tasks, ...next };
  }

  /** The legacy Task, or undefined when the upstream no longer knows it. */
  private async known(req: TaskRequest, taskId: string): Promise<JsonObject | undefined> {
    try {
      return legacyTaskFrom(await this.detailed(req, taskId));
    } catch (err) {
      if (err instanceof CausewayError && err.reason === 'unknown_name') return undefined;
      throw err;
    }
  }

  /** tasks/cancel upstream, then the task as it stands; a task already ended cannot be [L-TASKS]. */
  private async cancel(req: TaskRequest, taskId: string): Promise<JsonObject> {
    const before = await this.detailed(req, taskId);
    if (isTerminal(taskStatusOf(before.status)!)) {
      throw causewayError('unknown_name', `Cannot cancel task in terminal status: ${String(before.status)}`);
    }
    resultOf(await req.send('tasks/cancel', { taskId }, taskId), 'tasks/cancel', taskId);
    return legacyTaskFrom(await this.detailed(req, taskId))!;
  }
}
