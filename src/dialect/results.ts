// Legacy result -> 2026-07-28 result [BASE][CACHE]: resultType, ttlMs / cacheScope on the
// cacheable methods, serverInfo in result _meta, tools/list in a deterministic order.

import { META_SERVER_INFO, paramHeaders } from '../envelope/index.js';
import { copyObject, isObject, type JsonObject, type JsonValue } from '../jsonrpc.js';
import type { CacheScope } from '../config/index.js';
import { taskSupportOf, type TaskSupport } from './tasks.js';

export interface CacheHint {
  ttlMs: number;
  cacheScope: CacheScope;
}

export interface ResultContext {
  serverInfo: JsonObject | undefined;
  /** Present only for the cacheable methods. */
  cache: CacheHint | undefined;
}

// Copied member by member (copyObject): `{ ...result, resultType }` cost the warm call more than the rest of its
// translation.
export function withResultMeta(result: JsonObject, ctx: ResultContext): JsonObject {
  const out = copyObject(result);
  out.resultType = typeof result.resultType === 'string' ? result.resultType : 'complete';
  if (ctx.cache) {
    out.ttlMs = ctx.cache.ttlMs;
    out.cacheScope = ctx.cache.cacheScope;
  }
  if (ctx.serverInfo) {
    const meta = isObject(result._meta) ? copyObject(result._meta) : {};
    meta[META_SERVER_INFO] = ctx.serverInfo;
    out._meta = meta;
  }
  return out;
}

function byName(a: JsonValue, b: JsonValue): number {
  const an = isObject(a) && typeof a.name === 'string' ? a.name : '';
  const bn = isObject(b) && typeof b.name === 'string' ? b.name : '';
  return an < bn ? -1 : an > bn ? 1 : 0;
}

/**
 * tools/list: sorted by name [TOOLS "deterministic order"], and tools whose x-mcp-header
 * annotations are invalid are left out, as every HTTP client must drop them anyway [SHTTP].
 */
/** What a tools/list page says of each tool that a session's facts keep: its Mcp-Param annotations and task support. */
export function toolFacts(
  result: JsonObject,
): Array<{ name: string; headers: ReturnType<typeof paramHeaders>; support: TaskSupport }> {
  if (!Array.isArray(result.tools)) return [];
  const out: Array<{ name: string; headers: ReturnType<typeof paramHeaders>; support: TaskSupport }> = [];
  for (const tool of result.tools) {
    if (!isObject(tool) || typeof tool.name !== 'string') continue;
    out.push({ name: tool.name, headers: paramHeaders(tool.inputSchema), support: taskSupportOf(tool) });
  }
  return out;
}

export function normalizeToolsList(result: JsonObject): { result: JsonObject; dropped: string[] } {
  if (!Array.isArray(result.tools)) return { result, dropped: [] };
  const dropped: string[] = [];
  const tools = result.tools.filter((tool) => {
    if (!isObject(tool)) return false;
    if (paramHeaders(tool.inputSchema) !== undefined) return true;
    dropped.push(String(tool.name));
    return false;
  });
  return { result: { ...result, tools: [...tools].sort(byName) }, dropped };
}

/** What the 2026 result of a forwarded method looks like, given the legacy one. */
export function translateResult(method: string, result: JsonObject, ctx: ResultContext): JsonObject {
  const body = method === 'tools/list' ? normalizeToolsList(result).result : result;
  return withResultMeta(body, ctx);
}
