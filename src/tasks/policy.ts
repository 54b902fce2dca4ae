// The tasks extension's policy on the request path [SEP-2663], asked by the pipeline: whether a
// tools/call runs as a task (the upstream's own, or a call held here), what becomes of the
// upstream's answer to one, when a refused call means "declare the extension", and what
// tasks/get, tasks/update and tasks/cancel answer. The pipeline does the rest of the request;
// where a decision needs a tool's taskSupport it hands in its own read of tools/list.

import { declaresTasks, legacyTaskOf, upstreamRunsTasks, TASKS_EXTENSION, TASKS_REQUIRED } from '../dialect/index.js';
import type { ModernRequest } from '../envelope/index.js';
import { causewayError } from '../errors.js';
import { isErrorResponse, isObject, type JsonObject, type JsonRpcResponse } from '../jsonrpc.js';
import type { PooledSession, SessionKey } from '../pool/index.js';
import type { TaskBridge } from './bridge.js';

/** What the policy needs of one upstream's dependencies (routing's ModernDeps has them). */
export interface TaskDeps {
  upstreamName: string;
  tasks: TaskBridge;
  /** upstream.taskTools: the tools Causeway runs as tasks itself. */
  taskTools: readonly RegExp[];
  /** upstream.taskSupport: where the upstream runs no tasks, a tool's own taskSupport makes it a task held here. */
  taskSupport: boolean;
}

/** The pipeline's read of a session's tools into its facts (tools/list, once per session until they change). */
export type LearnTools<X, D> = (ex: X, deps: D, session: PooledSession) => Promise<void>;

export interface TaskPlan {
  /** The request to send: a client's own `task` param dropped, the upstream's added when it runs the call as a task. */
  request: ModernRequest;
  /** Sent as a legacy task-augmented tools/call. */
  asTask: boolean;
  /**
   * Held here as a task: `now` (upstream.taskTools) answers the task at once; `after-asks` (the
   * tool's own taskSupport) answers the questions the call asks before it works as rounds first.
   */
  runHere: false | 'now' | 'after-asks';
  /**
   * Held `after-asks` for a tool whose taskSupport is optional: its questions are the task's from
   * the first, so one asked before it works makes the task. A required tool's stay rounds first.
   */
  asksInTask: boolean;
}

/** tasks/get, tasks/update and tasks/cancel, for clients that declare the extension: the result to answer with. */
export async function answerTask(request: ModernRequest, deps: TaskDeps, principal: string): Promise<JsonObject> {
  if (!declaresTasks(request.meta.clientCapabilities)) {
    throw causewayError(
      'missing_client_capability',
      `${request.method} needs the ${TASKS_EXTENSION} extension`,
      TASKS_REQUIRED,
    );
  }
  const taskId = request.name!;
  let result: JsonObject = { resultType: 'complete' };
  if (request.method === 'tasks/get') result = await deps.tasks.get(deps.upstreamName, principal, taskId);
  else if (request.method === 'tasks/update') {
    const responses = request.params.inputResponses;
    if (!isObject(responses)) throw causewayError('invalid_params', 'inputResponses must be an object');
    await deps.tasks.update(deps.upstreamName, principal, taskId, responses);
  } else await deps.tasks.cancel(deps.upstreamName, principal, taskId);
  return result;
}

/**
 * Whether a tools/call runs as a task (the server decides, so a client's own `task` param is
 * dropped). For a request that declared the extension: as the upstream's own task when it runs the
 * tool as one (execution.taskSupport optional or required); else held here, at once when
 * upstream.taskTools names the tool, or after its first questions when the tool's own taskSupport
 * says so (upstream.taskSupport) on an upstream that runs no tasks: a `required` tool's questions
 * before it works are rounds, as they are inside a task-augmented call; an `optional` one's first
 * question makes the task, since such a tool asks as a plain call would. On such an upstream a
 * `required` tool called without the extension is refused here, -32021 naming it, before anything
 * is sent. A tool's taskSupport costs a tools/list once per session, and only where it decides.
 */
export async function taskPlan<X extends { request: ModernRequest }, D extends TaskDeps>(
  ex: X,
  deps: D,
  session: PooledSession,
  principal: string,
  learnTools: LearnTools<X, D>,
): Promise<TaskPlan> {
  let request = ex.request;
  if (request.params.task !== undefined) {
    const { task: _clientTask, ...params } = request.params;
    void _clientTask;
    request = { ...request, params };
  }
  const name = request.name!;
  const caps = session.record.initializeResult.capabilities;
  const upstreamTasks = upstreamRunsTasks(caps);
  // Only an upstream that lists tools can say which are tasks.
  const byWord = deps.taskSupport && !upstreamTasks && isObject(caps) && isObject(caps.tools);
  const support = async () => {
    if (session.facts.taskSupport(name) === undefined) await learnTools(ex, deps, session);
    return session.facts.taskSupport(name);
  };
  if (!declaresTasks(request.meta.clientCapabilities)) {
    if (byWord && (await support()) === 'required') throw requiredTask(name);
    return { request, asTask: false, runHere: false, asksInTask: false };
  }
  const listed = deps.taskTools.some((pattern) => pattern.test(name));
  const said = upstreamTasks || (byWord && !listed) ? await support() : undefined;
  const supported = said === 'optional' || said === 'required';
  const asTask = upstreamTasks && supported;
  const runHere = asTask ? false : listed ? 'now' : supported ? 'after-asks' : false;
  const asksInTask = runHere === 'after-asks' && said === 'optional';
  if (!asTask && !runHere) return { request, asTask, runHere, asksInTask };
  if (!deps.tasks.hasRoom(principal)) throw causewayError('overloaded', 'Too many tasks in flight');
  if (asTask) request = { ...request, params: { ...request.params, task: { ttl: deps.tasks.ttlMs } } };
  return { request, asTask, runHere, asksInTask };
}

/**
 * True when taskPlan would send the call as it is, from what is known now (no tools/list to
 * read), and refuseRequiredTask could refuse nothing: no upstream.taskTools pattern holds it for a
 * client that declared the extension, and where the upstream runs tasks or upstream.taskSupport
 * applies, the tool's taskSupport is known and makes it no task (forbidden, or optional for a
 * client that did not declare the extension). The warm lane serves only such calls.
 */
export function plainCall(deps: TaskDeps, session: PooledSession, request: ModernRequest): boolean {
  if (request.params.task !== undefined) return false;
  const caps = session.record.initializeResult.capabilities;
  const name = request.name!;
  const declared = declaresTasks(request.meta.clientCapabilities);
  if (declared && deps.taskTools.some((pattern) => pattern.test(name))) return false;
  const upstreamTasks = upstreamRunsTasks(caps);
  if (!upstreamTasks && !(deps.taskSupport && isObject(caps) && isObject(caps.tools))) return true;
  const support = session.facts.taskSupport(name);
  return support === 'forbidden' || (!declared && support === 'optional');
}

/**
 * `server/discover` advertises the extension where Causeway holds some of the upstream's tools as
 * tasks: upstream.taskTools is set, or (upstream.taskSupport, an upstream that runs no tasks and
 * lists tools) a listed tool's taskSupport is optional or required. The upstream's own tasks are
 * advertised from its capabilities.
 */
export async function holdsTasks<X, D extends TaskDeps>(
  ex: X,
  deps: D,
  session: PooledSession,
  learnTools: LearnTools<X, D>,
): Promise<boolean> {
  if (deps.taskTools.length > 0) return true;
  const caps = session.record.initializeResult.capabilities;
  if (!deps.taskSupport || upstreamRunsTasks(caps) || !(isObject(caps) && isObject(caps.tools))) return false;
  // A new session relies on what the upstream's scout listed until its own tools are read, as a call does.
  if (!session.facts.knowsAll) await learnTools(ex, deps, session);
  return session.facts.hasTaskTools;
}

function requiredTask(name: string) {
  return causewayError(
    'missing_client_capability',
    `Tool ${name} runs only as a task: declare the ${TASKS_EXTENSION} extension`,
    TASKS_REQUIRED,
  );
}

/**
 * The upstream's answer to a call sent as its task: when it is a task, it becomes Causeway's,
 * recorded before the client hears of it (the CreateTaskResult to answer with); else undefined.
 */
export function upstreamTaskCreated(
  deps: TaskDeps,
  key: SessionKey,
  principal: string,
  session: PooledSession,
  response: JsonRpcResponse,
): Promise<JsonObject> | undefined {
  const legacyTask = !isErrorResponse(response) ? legacyTaskOf(response.result) : undefined;
  return legacyTask
    ? deps.tasks.created({ upstream: deps.upstreamName, key, principal, session }, legacyTask)
    : undefined;
}

/**
 * A tool that runs only as a task, called without the extension, is refused by the upstream
 * (-32601, or an isError result from SDK servers): the client gets -32021 naming the extension
 * instead [SEP-2663]. Only such a refusal costs a tools/list, to learn that the tool is one.
 */
export async function refuseRequiredTask<X extends { request: ModernRequest }, D>(
  ex: X,
  deps: D,
  session: PooledSession,
  response: JsonRpcResponse,
  learnTools: LearnTools<X, D>,
): Promise<void> {
  const refused = isErrorResponse(response) ? response.error.code === -32601 : response.result.isError === true;
  if (!refused || !upstreamRunsTasks(session.record.initializeResult.capabilities)) return;
  const name = ex.request.name!;
  if (session.facts.taskSupport(name) === undefined) await learnTools(ex, deps, session);
  if (session.facts.taskSupport(name) === 'required') throw requiredTask(name);
}
