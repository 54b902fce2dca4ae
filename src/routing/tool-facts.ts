// What a pooled session's tools say of themselves (x-mcp-header annotations, execution.taskSupport),
// read into its facts from tools/list: once, until its tools change. The pipeline needs them to
// check Mcp-Param-* headers and to decide which calls are tasks; a federated discover, to know
// whether a member's tools are.

import { toolFacts } from '../dialect/index.js';
import { sessionRef, type PooledSession } from '../pool/index.js';
import { walkList } from '../upstream/index.js';
import type { ModernDeps } from './exchange.js';

/** Pages of tools/list read at most to learn a session's tools. */
const MAX_TOOL_PAGES = 50;

/** Reads every page of tools/list into the session's facts, once, until the tools change. */
export async function learnTools(ex: { signal: AbortSignal }, deps: ModernDeps, session: PooledSession): Promise<void> {
  const { facts } = session;
  if (facts.toolsComplete) return;
  const walk = await walkList(deps, sessionRef(session), 'tools/list', (page) => facts.learnTools(toolFacts(page)), { maxPages: MAX_TOOL_PAGES, signal: ex.signal });
  if (walk.complete) facts.toolsComplete = true;
}
