// The x-mcp-header annotations of the tools an upstream session listed, remembered per session
// so tools/call can check its Mcp-Param-* headers without asking the upstream every time.

import { paramHeaders, type ParamHeader } from '../envelope/headers.js';
import { isObject, type JsonObject } from '../jsonrpc.js';
import type { PooledSession } from '../pool/pool.js';

export class ToolCatalog {
  private readonly tools = new Map<string, ParamHeader[]>();
  complete = false;

  /** The catalog kept in a session's memo, made on first use. */
  static of(session: PooledSession): ToolCatalog {
    let c = session.memo.get('tools') as ToolCatalog | undefined;
    if (!c) {
      c = new ToolCatalog();
      session.memo.set('tools', c);
    }
    return c;
  }

  /** Learns from one tools/list page. */
  learn(result: JsonObject): void {
    if (!Array.isArray(result.tools)) return;
    for (const tool of result.tools) {
      if (!isObject(tool) || typeof tool.name !== 'string') continue;
      const headers = paramHeaders(tool.inputSchema);
      if (headers) this.tools.set(tool.name, headers);
    }
  }

  headersOf(name: string): ParamHeader[] | undefined {
    return this.tools.get(name);
  }
}
