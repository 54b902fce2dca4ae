// The server's lists, read as Causeway reads them (every page, bounded), and what its tools mean
// for Causeway: a name it can route calls by, the Mcp-Param-* headers their annotations give
// (envelope's reading, with why when they give none), and execution.taskSupport (dialect's).

import { readParamHeaders } from '../envelope/index.js';
import { taskSupportOf } from '../dialect/index.js';
import { isObject, type JsonObject, type JsonValue } from '../jsonrpc.js';
import { blocking, warning, type Era, type ListCount, type Problem, type Report, type ToolFinding } from './report.js';

/** Pages read of each list at most: enough for any real server, a bound for a looping cursor. */
export const MAX_PAGES = 50;

export const LISTS = [
  { key: 'tools', method: 'tools/list', field: 'tools', capability: 'tools' },
  { key: 'prompts', method: 'prompts/list', field: 'prompts', capability: 'prompts' },
  { key: 'resources', method: 'resources/list', field: 'resources', capability: 'resources' },
  { key: 'resourceTemplates', method: 'resources/templates/list', field: 'resourceTemplates', capability: 'resources' },
] as const;

export type ListKey = (typeof LISTS)[number]['key'];

/** One page of a list: its result, or the server's refusal in words. */
export type PageReader = (method: string, cursor: string | undefined) => Promise<JsonObject | { refused: string }>;

/** Every item of one list, page after page, up to MAX_PAGES. */
export async function readList(
  read: PageReader,
  method: string,
  field: string,
): Promise<{ items: JsonValue[]; count: ListCount }> {
  const items: JsonValue[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await read(method, cursor);
    if ('refused' in result && typeof result.refused === 'string') {
      return { items, count: { count: items.length, complete: false, error: result.refused } };
    }
    const got = (result as JsonObject)[field];
    if (Array.isArray(got)) items.push(...got);
    const next = (result as JsonObject).nextCursor;
    cursor = typeof next === 'string' ? next : undefined;
    if (cursor === undefined) return { items, count: { count: items.length, complete: true } };
  }
  return { items, count: { count: items.length, complete: false, error: `stopped after ${MAX_PAGES} pages` } };
}

/** Each list the capabilities declare, counted; the tools kept for their findings. */
export async function readLists(
  read: PageReader,
  capabilities: JsonObject,
): Promise<{ lists: NonNullable<Report['lists']>; tools: JsonValue[] }> {
  const lists: NonNullable<Report['lists']> = {};
  let tools: JsonValue[] = [];
  for (const list of LISTS) {
    if (!isObject(capabilities[list.capability])) continue;
    const { items, count } = await readList(read, list.method, list.field);
    lists[list.key] = count;
    if (list.key === 'tools') tools = items;
  }
  return { lists, tools };
}

/** Whether each list declares listChanged. */
export function listChanged(capabilities: JsonObject): NonNullable<Report['listChanged']> {
  const declared = (key: string) => isObject(capabilities[key]) && capabilities[key].listChanged === true;
  return { tools: declared('tools'), prompts: declared('prompts'), resources: declared('resources') };
}

/** What each tool means for Causeway, and the problems its entries make. */
export function toolFindings(tools: readonly JsonValue[], era: Era): { findings: ToolFinding[]; problems: Problem[] } {
  const findings: ToolFinding[] = [];
  const problems: Problem[] = [];
  const seen = new Set<string>();
  tools.forEach((tool, i) => {
    if (!isObject(tool) || typeof tool.name !== 'string' || tool.name === '') {
      problems.push(blocking('unroutable_tool', `tools/list entry ${i} has no name: no call can be routed to it`));
      return;
    }
    if (seen.has(tool.name)) {
      problems.push(
        blocking(
          'unroutable_tool',
          `tool ${tool.name} is listed twice: a call by that name cannot be routed to one of them`,
        ),
      );
    }
    seen.add(tool.name);
    const read = readParamHeaders(tool.inputSchema);
    const paramHeaders =
      'problem' in read ? { problem: read.problem } : read.headers.map((h) => `Mcp-Param-${h.header}`);
    if ('problem' in read) {
      // The 2026 rules leave such a tool out of the list the translated side shows [SHTTP].
      const whom = era === 'legacy' ? "2026 clients' tools/list" : "legacy clients' tools/list";
      problems.push(
        warning(
          `tool ${tool.name}: its annotations cannot become Mcp-Param-* headers (${read.problem}); ` +
            `Causeway leaves it out of ${whom}`,
        ),
      );
    }
    findings.push({ name: tool.name, taskSupport: taskSupportOf(tool), paramHeaders });
  });
  return { findings, problems };
}

/** A list that could not be read whole: blocking when refused, a warning when only cut short. */
export function listProblems(lists: NonNullable<Report['lists']>): Problem[] {
  const out: Problem[] = [];
  for (const list of LISTS) {
    const count = lists[list.key];
    if (count === undefined || count.complete) continue;
    if (count.error?.startsWith('stopped after'))
      out.push(warning(`${list.method}: ${count.error}; counts are lower bounds`));
    else out.push(blocking('list_refused', `${list.method} was refused: ${count.error ?? 'unknown error'}`));
  }
  return out;
}
