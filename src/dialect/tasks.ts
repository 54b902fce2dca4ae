// The tasks extension's wire [SEP-2663][XT-SPEC] next to the 2025-11-25 tasks Causeway drives
// upstream [L-TASKS]: who declares what, and how a legacy Task's fields become a 2026 one's (and,
// for a legacy client of a 2026 server, back).

import { isObject, type JsonObject, type JsonValue } from '../jsonrpc.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The 2025-11-25 `_meta` key naming the task a message belongs to [L-TASKS]; 2026 carries none. */
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

const STATUSES: ReadonlySet<string> = new Set(['working', 'input_required', 'completed', 'failed', 'cancelled']);

export function isTerminal(status: TaskStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

export function taskStatusOf(v: JsonValue | undefined): TaskStatus | undefined {
  return typeof v === 'string' && STATUSES.has(v) ? (v as TaskStatus) : undefined;
}

/** The request declared the extension in its clientCapabilities [SEP-2663 negotiation]. */
export function declaresTasks(clientCapabilities: JsonObject): boolean {
  return isObject(clientCapabilities.extensions) && isObject(clientCapabilities.extensions[TASKS_EXTENSION]);
}

/**
 * The legacy server's capabilities say it runs task-augmented tools/call itself (2025-11-25
 * `tasks.requests.tools.call`).
 */
export function upstreamRunsTasks(caps: JsonValue | undefined): boolean {
  if (!isObject(caps) || !isObject(caps.tasks) || !isObject(caps.tasks.requests)) return false;
  const tools = caps.tasks.requests.tools;
  return isObject(tools) && isObject(tools.call);
}

/** What -32021 names when a tool can only run as a task and the client did not declare the extension. */
export const TASKS_REQUIRED: JsonObject = { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } };

/** A legacy tool's `execution.taskSupport`; "forbidden" when absent [L-TASKS]. */
export type TaskSupport = 'forbidden' | 'optional' | 'required';

export function taskSupportOf(tool: JsonObject): TaskSupport {
  const s = isObject(tool.execution) ? tool.execution.taskSupport : undefined;
  return s === 'optional' || s === 'required' ? s : 'forbidden';
}

/** Whole milliseconds, or undefined for anything that is not a positive number. */
function wholeMs(v: JsonValue | undefined): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.round(v) : undefined;
}

/** The legacy `{task}` of a CreateTaskResult, when the result is one. */
export function legacyTaskOf(result: JsonObject): JsonObject | undefined {
  return isObject(result.task) && typeof result.task.taskId === 'string' ? result.task : undefined;
}

/** The fields a 2026 Task takes from a legacy one: `ttl` -> `ttlMs`, `pollInterval` -> `pollIntervalMs`, flat. */
export interface TaskTimes {
  ttlMs: number | null;
  pollIntervalMs?: number;
}

export function timesOf(legacy: JsonObject): TaskTimes {
  const poll = wholeMs(legacy.pollInterval);
  return { ttlMs: wholeMs(legacy.ttl) ?? null, ...(poll === undefined ? {} : { pollIntervalMs: poll }) };
}

/** ISO 8601 from the upstream when it gave one, else now. */
export function isoTime(v: JsonValue | undefined): string {
  if (typeof v === 'string' && !Number.isNaN(Date.parse(v))) return v;
  return new Date().toISOString();
}

/**
 * A 2026 Task (a CreateTaskResult or a DetailedTask) as the flat legacy Task a 2025-11-25 server
 * answers: `ttlMs` -> `ttl`, `pollIntervalMs` -> `pollInterval`; no resultType, result, error or
 * inputRequests. Undefined when it names no task.
 */
export function legacyTaskFrom(task: JsonObject): JsonObject | undefined {
  const status = taskStatusOf(task.status);
  if (typeof task.taskId !== 'string' || status === undefined) return undefined;
  const out: JsonObject = { taskId: task.taskId, status };
  if (typeof task.statusMessage === 'string') out.statusMessage = task.statusMessage;
  out.createdAt = isoTime(task.createdAt);
  out.lastUpdatedAt = isoTime(task.lastUpdatedAt);
  out.ttl = wholeMs(task.ttlMs) ?? null;
  const poll = wholeMs(task.pollIntervalMs);
  if (poll !== undefined) out.pollInterval = poll;
  return out;
}
