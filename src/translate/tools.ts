// What a modern upstream's tools/list says of each tool's x-mcp-header annotations, learned from
// the lists that pass through the legacy face: a legacy client knows nothing of Mcp-Param-*, so
// Causeway mirrors the annotated arguments of its calls into them [SHTTP][SEP-2243]. A tool whose
// annotations are invalid is left out of the lists a legacy client gets, as a 2026 client would
// leave it out, and never called.

import { mirroredParamHeaders, paramHeaders, type ParamHeader } from '../envelope/index.js';
import { isObject, type JsonObject } from '../jsonrpc.js';
import { BoundedMap } from '../bounded.js';
import type { ModernCallOptions, ModernClient } from '../upstream/index.js';
import type { SessionRecord } from './sessions.js';
import { modernRequest } from './wire.js';

/** Bound on tools remembered; past it the oldest are forgotten (relearned from the next lists). */
const MAX_TOOLS = 10_000;
/** Pages of tools/list read at most to learn a tool's annotations. */
const MAX_LIST_PAGES = 20;

export class ToolHeaders {
  /** Tool name -> its annotations; null when they are invalid. */
  private readonly tools = new BoundedMap<string, ParamHeader[] | null>(MAX_TOOLS);

  has(name: string): boolean {
    return this.tools.has(name);
  }

  /** Learns a tools/list result's tools; the result without the tools whose annotations are invalid. */
  learn(result: JsonObject): JsonObject {
    if (!Array.isArray(result.tools)) return result;
    let dropped = false;
    const tools = result.tools.filter((tool) => {
      if (!isObject(tool) || typeof tool.name !== 'string') return true;
      const headers = paramHeaders(tool.inputSchema) ?? null;
      this.tools.set(tool.name, headers);
      if (headers === null) dropped = true;
      return headers !== null;
    });
    return dropped ? { ...result, tools } : result;
  }

  /** Whether the tool is known to have invalid annotations: it is never called. */
  invalid(name: string): boolean {
    return this.tools.get(name) === null;
  }

  /** The Mcp-Param-* headers of a call, when the tool's annotations are known. */
  headersFor(name: string, args: JsonObject | undefined): Record<string, string> {
    const params = this.tools.get(name);
    return params ? mirroredParamHeaders(params, args) : {};
  }

  /** Reads the upstream's tools/list, page by page (at most MAX_LIST_PAGES), to learn the tools' annotations. */
  async read(client: ModernClient, facts: SessionRecord, nextId: () => string, opts: ModernCallOptions): Promise<void> {
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const list = { jsonrpc: '2.0' as const, id: 0, method: 'tools/list', ...(cursor ? { params: { cursor } } : {}) };
      const { response } = await client.request(modernRequest(list, nextId(), facts, undefined), undefined, opts);
      if (!('result' in response)) return;
      this.learn(response.result);
      cursor = typeof response.result.nextCursor === 'string' ? response.result.nextCursor : undefined;
      if (cursor === undefined) return;
    }
  }
}
