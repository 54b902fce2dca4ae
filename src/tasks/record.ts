// A task as the store keeps it (one hash of string fields, so that the replica following a task
// and those answering clients set and remove fields without overwriting each other), and the
// 2026 shapes made from it: the Task envelope, the DetailedTask, a legacy outcome's result.

import {
  translateError,
  translateResult,
  RELATED_TASK_META,
  type TaskStatus,
  type TaskTimes,
} from '../dialect/index.js';
import {
  isErrorResponse,
  isObject,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcResponse,
  type RequestId,
} from '../jsonrpc.js';
import type { PooledSession, SessionKey } from '../pool/index.js';

/** How long a record outlives its task's ttl, so a task is never forgotten before its ttlMs. */
export const RECORD_MARGIN_MS = 60_000;

/** Where a task came from, as the request that created it knows it. */
export interface TaskOrigin {
  upstream: string;
  key: SessionKey;
  principal: string;
  session: PooledSession;
}

/** How a task ended: kept once known, so tasks/get stops asking the upstream. */
export interface Outcome {
  status: Extract<TaskStatus, 'completed' | 'failed' | 'cancelled'>;
  statusMessage?: string;
  lastUpdatedAt: string;
  result?: JsonObject;
  error?: JsonRpcErrorObject;
}

export interface PendingAsk {
  /** The upstream's JSON-RPC id of the ask: the answer is POSTed under it. */
  id: string | number;
  input: JsonObject;
}

/** A task as the store holds it; field names in the store are in `toFields`. */
export interface TaskRecord {
  id: string;
  upstream: string;
  key: SessionKey;
  principal: string;
  /** The upstream's own task; absent for a call Causeway holds itself. */
  upstreamTaskId?: string;
  createdAt: string;
  times: TaskTimes;
  outcome?: Outcome;
  asks: Map<string, PendingAsk>;
  /** A held call: its upstream JSON-RPC id (to cancel it from any replica), the holder's heartbeat, the last change. */
  call?: RequestId;
  aliveUntil?: number;
  updatedAt?: string;
}

/** What the upstream's tasks/get says, or that it no longer knows the task. */
export type UpstreamView = { status: TaskStatus; statusMessage?: string; lastUpdatedAt: string } | 'lost';

export const ASK_PREFIX = 'a:';

export function outcomeOf(
  view: Exclude<UpstreamView, 'lost'>,
  r: JsonRpcResponse,
  serverInfo: JsonObject | undefined,
): Outcome {
  const at = { statusMessage: view.statusMessage, lastUpdatedAt: view.lastUpdatedAt };
  if (isErrorResponse(r)) return { status: 'failed', ...at, error: translateError('tools/call', r.error, {}) };
  if (view.status === 'failed')
    return { status: 'failed', ...at, error: { code: -32603, message: view.statusMessage ?? 'The task failed' } };
  return {
    status: 'completed',
    ...at,
    result: translateResult('tools/call', withoutRelatedTask(r.result), { serverInfo, cache: undefined }),
  };
}

/** The 2025-11-25 related-task key is not carried on an inlined result [XT-SPEC]. */
function withoutRelatedTask(result: JsonObject): JsonObject {
  if (!isObject(result._meta) || !(RELATED_TASK_META in result._meta)) return result;
  const { [RELATED_TASK_META]: _related, ...meta } = result._meta;
  void _related;
  const { _meta: _old, ...rest } = result;
  void _old;
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}

/** The Task fields every answer about a task carries. */
export function envelope(task: TaskRecord, now: TaskNow): JsonObject {
  return {
    taskId: task.id,
    status: now.status,
    ...(now.statusMessage === undefined ? {} : { statusMessage: now.statusMessage }),
    createdAt: task.createdAt,
    lastUpdatedAt: now.lastUpdatedAt,
    ttlMs: task.times.ttlMs,
    ...(task.times.pollIntervalMs === undefined ? {} : { pollIntervalMs: task.times.pollIntervalMs }),
  };
}

/** Where a task stands now, as a DetailedTask tells it. */
export interface TaskNow {
  status: TaskStatus;
  statusMessage?: string;
  lastUpdatedAt: string;
  result?: JsonObject;
  error?: JsonRpcErrorObject;
  inputRequests?: JsonObject;
}

export function detailed(task: TaskRecord, now: TaskNow): JsonObject {
  return {
    resultType: 'complete',
    ...envelope(task, now),
    ...(now.inputRequests ? { inputRequests: now.inputRequests } : {}),
    ...(now.result ? { result: now.result } : {}),
    ...(now.error ? { error: now.error as unknown as JsonObject } : {}),
  };
}

export function toFields(task: TaskRecord): Record<string, string> {
  return {
    u: task.upstream,
    k: JSON.stringify(task.key),
    p: task.principal,
    ...(task.upstreamTaskId === undefined ? {} : { t: task.upstreamTaskId }),
    c: task.createdAt,
    l: JSON.stringify(task.times),
    ...(task.call === undefined ? {} : { q: JSON.stringify(task.call) }),
  };
}

export function fromFields(id: string, f: Record<string, string>): TaskRecord | undefined {
  if (f.u === undefined || f.k === undefined || f.p === undefined || f.c === undefined || f.l === undefined)
    return undefined;
  const asks = new Map<string, PendingAsk>();
  for (const [name, value] of Object.entries(f)) {
    if (name.startsWith(ASK_PREFIX)) asks.set(name.slice(ASK_PREFIX.length), JSON.parse(value) as PendingAsk);
  }
  return {
    id,
    upstream: f.u,
    key: JSON.parse(f.k) as SessionKey,
    principal: f.p,
    ...(f.t === undefined ? {} : { upstreamTaskId: f.t }),
    createdAt: f.c,
    times: JSON.parse(f.l) as TaskTimes,
    ...(f.f === undefined ? {} : { outcome: JSON.parse(f.f) as Outcome }),
    asks,
    ...(f.q === undefined ? {} : { call: JSON.parse(f.q) as RequestId }),
    ...(f.b === undefined ? {} : { aliveUntil: Number(f.b) }),
    ...(f.m === undefined ? {} : { updatedAt: f.m }),
  };
}
