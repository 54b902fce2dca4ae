// What a pooled session's tools say of themselves (x-mcp-header annotations, execution.taskSupport),
// read into its facts from tools/list: once, until its tools change. The pipeline needs them to
// check Mcp-Param-* headers and to decide which calls are tasks; a federated discover, to know
// whether a member's tools are.

import { toolFacts } from '../dialect/index.js';
import type { HeaderBag } from '../envelope/index.js';
import type { JsonObject } from '../jsonrpc.js';
import { sessionRef, type PooledSession } from '../pool/index.js';
import { walkList, type OwnCallDeps } from '../upstream/index.js';
import type { ModernDeps } from './exchange.js';

/** Pages of tools/list read at most to learn a session's tools. */
const MAX_TOOL_PAGES = 50;

/**
 * Reads every page of tools/list into the session's facts, once, until the tools change: from the
 * gateway cache when it holds them all (any replica's reading, for a public list), else from the
 * upstream.
 */
export async function learnTools(
  ex: { signal: AbortSignal; headers?: HeaderBag },
  deps: ModernDeps,
  session: PooledSession,
): Promise<void> {
  const { facts } = session;
  if (facts.toolsComplete) return;
  if (await fromCache(ex, deps, session)) {
    facts.toolsComplete = true;
    return;
  }
  await readTools(deps, session, ex.signal);
}

/**
 * Every page of the session's tools/list, from the upstream, into its facts, complete once the last
 * page was read: what learnTools does past the cache, and how an upstream's scout reads its tools
 * (subscriptions/standing.ts).
 */
export async function readTools(own: OwnCallDeps, session: PooledSession, signal?: AbortSignal): Promise<void> {
  const { facts } = session;
  const walk = await walkList(own, sessionRef(session), 'tools/list', (page) => facts.learnTools(toolFacts(page)), {
    maxPages: MAX_TOOL_PAGES,
    ...(signal ? { signal } : {}),
  });
  if (walk.complete) facts.toolsComplete = true;
}

/** True when the gateway cache held every page of the session's tools/list, now learned. */
async function fromCache(ex: { headers?: HeaderBag }, deps: ModernDeps, session: PooledSession): Promise<boolean> {
  const cache = deps.cache;
  if (cache === undefined) return false;
  // Keyed as the pipeline keeps a modern client's tools/list for this session (pipeline.ts).
  const scope = deps.cacheHint('tools/list').cacheScope;
  const pages: JsonObject[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const q = cache.query(
      'tools/list',
      cursor === undefined ? {} : { cursor },
      scope === 'public' ? '' : session.key.id,
      ex.headers?.authorization,
    );
    const e = await cache.peek(q, scope);
    if (e === undefined) return false;
    const result = cache.result(e);
    pages.push(result);
    cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (cursor === undefined) {
      for (const p of pages) session.facts.learnTools(toolFacts(p));
      return true;
    }
  }
  return false;
}
