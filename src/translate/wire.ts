// The two eras' wire shapes, one into the other, for a legacy client of a modern upstream:
// initialize answered from server/discover, a legacy request as a 2026 request carrying the
// session's `_meta`, a 2026 answer as the legacy answer (errors recoded into the legacy era; its
// 2026-only fields and `_meta` keys are left out by clean.ts, on everything the face sends).

import { declaresTasks, TASKS_EXTENSION } from '../dialect/index.js';
import {
  isObject,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from '../jsonrpc.js';
import { MODERN_VERSION } from '../upstream/index.js';

/** The legacy revisions Causeway speaks to a legacy client, newest first [L-LIFE]. */
export const LEGACY_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

/** The version a legacy client's initialize gets: its own when Causeway speaks it, else the newest [L-LIFE]. */
export function negotiate(requested: string): string {
  return LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[0]!;
}

/** The client capabilities a 2026 server may use in an input_required round [MRTR]. */
const ASKABLE = ['roots', 'sampling', 'elicitation'] as const;

/** What a legacy session states of its client in every 2026 request's `_meta`. */
export interface ClientFacts {
  clientInfo: JsonObject;
  /** Only the capabilities the legacy client declared. */
  capabilities: JsonObject;
}

export function declared(capabilities: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const name of ASKABLE) if (isObject(capabilities[name])) out[name] = capabilities[name];
  return out;
}

/** The legacy initialize result, from the upstream's DiscoverResult. */
export function initializeResult(discover: JsonObject, version: string, upstream: string): JsonObject {
  const meta = isObject(discover._meta) ? discover._meta : {};
  const serverInfo = isObject(meta['io.modelcontextprotocol/serverInfo'])
    ? meta['io.modelcontextprotocol/serverInfo']
    : { name: upstream, version: '0' };
  const caps = isObject(discover.capabilities) ? discover.capabilities : {};
  const capabilities: JsonObject = {};
  for (const name of ['tools', 'prompts', 'logging', 'completions'] as const)
    if (isObject(caps[name])) capabilities[name] = caps[name];
  // resources/subscribe is served by Causeway over subscriptions/listen.
  if (isObject(caps.resources)) capabilities.resources = { ...caps.resources, subscribe: true };
  // The legacy tasks, served over the upstream's tasks extension (tasks.ts).
  if (declaresTasks(caps)) capabilities.tasks = { list: {}, cancel: {}, requests: { tools: { call: {} } } };
  const result: JsonObject = { protocolVersion: version, capabilities, serverInfo };
  if (typeof discover.instructions === 'string') result.instructions = discover.instructions;
  return result;
}

/** The session's facts with the tasks extension declared: for a task-augmented call and each tasks/* [SEP-2663]. */
export function withTasks(facts: ClientFacts): ClientFacts {
  return { ...facts, capabilities: { ...facts.capabilities, extensions: { [TASKS_EXTENSION]: {} } } };
}

/** The 2026 request for a legacy one: the same params, with the session's `_meta` beside the client's own keys. */
export function modernRequest(
  msg: JsonRpcRequest,
  id: RequestId,
  facts: ClientFacts,
  logLevel: string | undefined,
  extra?: JsonObject,
): JsonRpcRequest {
  const params: JsonObject = isObject(msg.params) ? { ...msg.params } : {};
  const meta: JsonObject = isObject(params._meta) ? { ...params._meta } : {};
  meta['io.modelcontextprotocol/protocolVersion'] = MODERN_VERSION;
  meta['io.modelcontextprotocol/clientCapabilities'] = facts.capabilities;
  meta['io.modelcontextprotocol/clientInfo'] = facts.clientInfo;
  if (logLevel !== undefined) meta['io.modelcontextprotocol/logLevel'] = logLevel;
  params._meta = meta;
  if (extra) Object.assign(params, extra);
  return { jsonrpc: '2.0', id, method: msg.method, params };
}

/**
 * A 2026 response as the legacy client's: its id, its error recoded. Its 2026-only fields and
 * `_meta` keys are left out where the face sends it (clean.ts).
 */
export function legacyResponse(
  response: JsonRpcResponse,
  id: RequestId,
  method: string,
  params: JsonObject,
): JsonRpcResponse {
  if ('error' in response) return { jsonrpc: '2.0', id, error: legacyError(response.error, method, params) };
  return { jsonrpc: '2.0', id, result: response.result };
}

/** 2026 names a missing resource -32602; the legacy era named it -32002 with data.uri [RES]. */
function legacyError(error: JsonRpcErrorObject, method: string, params: JsonObject): JsonRpcErrorObject {
  // 2026 names the missing resource in data.uri [RES]; older servers say so in words.
  const named = isObject(error.data) && error.data.uri !== undefined;
  if (
    method === 'resources/read' &&
    error.code === -32602 &&
    (named || /not found|unknown resource/i.test(error.message))
  ) {
    return { code: -32002, message: error.message, data: { uri: params.uri ?? null } };
  }
  return error;
}
