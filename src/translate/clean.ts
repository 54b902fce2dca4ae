// What a legacy client gets from the translated face, as a legacy server would send it: the one
// function every message the face sends goes through (face.ts), whichever road it took (an
// answer, a cached answer, a call's stream, an ask, the GET stream). A 2026 server names itself
// in every result's `_meta` (io.modelcontextprotocol/serverInfo), and widely used legacy clients
// turn a result's `_meta` into content shown to the model: left there, it becomes words the
// server never said. Left out, wherever a protocol object carries `_meta` (the result or the
// params, and the tools, prompts, resources, contents and content blocks in them): the keys
// under a reserved prefix (one whose second label is `modelcontextprotocol` or `mcp` [BASE]),
// but the 2025-11-25 era's model-immediate-response; a `_meta` left empty. Left out of a result:
// resultType, ttlMs and cacheScope [S26][CACHE]. Dropped whole: a notification no legacy server
// sends (a listen's acknowledgment, the tasks extension's notifications/tasks). The server's own
// keys, under its own prefixes or none, are kept, and its data (structured content, schemas, log
// data) is not read at all. The era's related-task key is the face's own word: a 2026 server has
// none to give, so one it sends is left out like any other, and the face names a task only where
// a 2025-11-25 server would, on a tasks/result's answer and its asks (`relatedTask`, tasks.ts).

import {
  copyObject,
  isNotification,
  isObject,
  isRequest,
  isResponse,
  type JsonObject,
  type JsonRpcMessage,
  type JsonRpcResponse,
  type JsonValue,
} from '../jsonrpc.js';

/** Fields a 2026 result carries that no legacy result has [S26][CACHE]. */
const MODERN_FIELDS = new Set(['resultType', 'ttlMs', 'cacheScope']);

/** Reserved `_meta` keys the 2025-11-25 era defines itself, for its tasks, and a server may send [L-TASKS]. */
const LEGACY_KEYS = new Set(['io.modelcontextprotocol/model-immediate-response']);

/** The 2025-11-25 key naming the task a message belongs to [L-TASKS]: set by the face only. */
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

/** The notifications a 2025-11-25 server sends a client [S25]. */
const NOTIFICATIONS = new Set([
  'notifications/cancelled',
  'notifications/progress',
  'notifications/message',
  'notifications/resources/updated',
  'notifications/resources/list_changed',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/elicitation/complete',
  'notifications/tasks/status',
]);

/** Members whose values are the server's data, not protocol objects: never read, never changed. */
const DATA = new Set([
  'structuredContent',
  'inputSchema',
  'outputSchema',
  'requestedSchema',
  'metadata',
  'data',
  'arguments',
]);

/** A key under a reserved prefix: `io.modelcontextprotocol/…`, `dev.mcp/…` [BASE]. */
function reserved(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const second = key.slice(0, slash).split('.')[1];
  return second === 'modelcontextprotocol' || second === 'mcp';
}

/** A `_meta` without the 2026 protocol's keys; undefined when none is left. The same object when nothing goes. */
function meta(value: JsonValue | undefined): JsonValue | undefined {
  if (!isObject(value)) return value;
  const leave = (k: string) => reserved(k) && !LEGACY_KEYS.has(k);
  if (!Object.keys(value).some(leave)) return value;
  const out = copyObject(value, leave);
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * A protocol value with every `_meta` in it cleaned, and without the members `leave` names; the
 * same value when nothing changed (copied only where something did).
 */
function clean(value: JsonValue | undefined, leave?: ReadonlySet<string>): JsonValue | undefined {
  if (Array.isArray(value)) {
    let out: JsonValue[] | undefined;
    value.forEach((v, i) => {
      const c = clean(v);
      if (c !== v) (out ??= value.slice())[i] = c ?? null;
    });
    return out ?? value;
  }
  if (!isObject(value)) return value;
  let changed = false;
  const cleaned = new Map<string, JsonValue | undefined>();
  for (const k in value) {
    if (leave?.has(k)) {
      changed = true;
      continue;
    }
    if (DATA.has(k)) continue;
    const v = value[k];
    const c = k === '_meta' ? meta(v) : clean(v);
    if (c !== v) {
      changed = true;
      cleaned.set(k, c);
    }
  }
  if (!changed) return value;
  const out = copyObject(value, (k) => leave?.has(k) === true || (cleaned.has(k) && cleaned.get(k) === undefined));
  for (const [k, c] of cleaned) if (c !== undefined) out[k] = c;
  return out;
}

/** `value` (a result or a request's params) naming `taskId` in its `_meta` [L-TASKS]. */
function related(value: JsonObject, taskId: string): JsonObject {
  const meta = isObject(value._meta) ? value._meta : {};
  return { ...value, _meta: { ...meta, [RELATED_TASK]: { taskId } } };
}

/**
 * A message of the translated face as a legacy server would send it; undefined for a
 * notification no legacy server sends. Errors pass as they are (legacyResponse recodes them).
 * `relatedTask`: the task a tasks/result's answer and asks belong to, named in their `_meta`.
 */
export function legacyMessage(msg: JsonRpcResponse, relatedTask?: string): JsonRpcResponse;
export function legacyMessage(msg: JsonRpcMessage, relatedTask?: string): JsonRpcMessage | undefined;
export function legacyMessage(msg: JsonRpcMessage, relatedTask?: string): JsonRpcMessage | undefined {
  if (isResponse(msg)) {
    if (!('result' in msg)) return msg;
    const result = clean(msg.result, MODERN_FIELDS) as JsonObject;
    if (relatedTask !== undefined) return { ...msg, result: related(result, relatedTask) };
    return result === msg.result ? msg : { ...msg, result };
  }
  if (isNotification(msg) && !NOTIFICATIONS.has(msg.method)) return undefined;
  if (relatedTask !== undefined && isRequest(msg)) {
    return { ...msg, params: related((clean(msg.params) as JsonObject | undefined) ?? {}, relatedTask) };
  }
  if (msg.params === undefined) return msg;
  const params = clean(msg.params) as JsonObject;
  return params === msg.params ? msg : { ...msg, params };
}
