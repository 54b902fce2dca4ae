// What Causeway has learned about one pooled upstream session, kept beside it on this replica:
// the x-mcp-header annotations of the tools it listed (so tools/call can check its Mcp-Param-*
// headers without asking the upstream each time), which tools run as tasks, and whether
// upstream logging is turned on.
// A change notification from the upstream makes some of it stale: invalidate(method) forgets
// that part, here and, through the subscriptions bus, on every other replica.
// PooledSession is the session as this replica holds it: its record with these facts beside it
// (here, not in pool.ts, so that the pool's helpers need not import the pool).

import type { ParamHeader } from '../envelope/index.js';
import type { SessionKey } from './session-key.js';
import type { SessionRecord } from './store/index.js';

/** A listed tool's execution.taskSupport (forbidden when it says nothing). */
export type TaskSupport = 'optional' | 'required' | 'forbidden';

/** What a tools/list page says of one tool that facts keep (dialect's toolFacts reads it). */
export interface ToolFacts {
  name: string;
  /** Its x-mcp-header annotations; undefined when they are invalid. */
  headers: ParamHeader[] | undefined;
  support: TaskSupport;
}

/** A session as this replica knows it, with replica-local facts learned while using it. */
export interface PooledSession {
  readonly key: SessionKey;
  record: SessionRecord;
  /** What this replica learned about the session (tool header annotations, logging on). */
  facts: SessionFacts;
  lastUsedAt: number;
  /** Opened while the store failed: known to this replica only until it is published. */
  localOnly: boolean;
  /** This replica ran its initialize (rather than finding it in the store). */
  readonly openedHere?: boolean;
}

/** Change notifications that make part of what is known stale. */
const STALES_FACTS: ReadonlySet<string> = new Set(['notifications/tools/list_changed']);

export class SessionFacts {
  /** Made when a tool has something to keep: most sessions' tools have no annotation and run no task. */
  private tools: Map<string, ParamHeader[]> | undefined;
  private taskTools: Map<string, TaskSupport> | undefined;
  /** Every page of tools/list was learned since the tools last changed. */
  toolsComplete = false;
  /** logging/setLevel debug was sent on this session: per-request levels are filtered here. */
  loggingEnabled = false;

  /** Whether `method` (a change notification) makes part of any session's facts stale. */
  static staledBy(method: string): boolean {
    return STALES_FACTS.has(method);
  }

  /** Every change that makes some facts stale. */
  static staling(): Iterable<string> {
    return STALES_FACTS;
  }

  /** Learns from one tools/list page, as dialect's toolFacts read it. */
  learnTools(tools: Iterable<ToolFacts>): void {
    for (const { name, headers, support } of tools) {
      // Only tools with annotations are kept: most have none, and a pooled session keeps its facts for life.
      if (headers && headers.length > 0) (this.tools ??= new Map()).set(name, headers);
      if (support !== 'forbidden') (this.taskTools ??= new Map()).set(name, support);
    }
  }

  /** A tool's Mcp-Param-* annotations; undefined when it has none or is not known (yet). */
  toolHeaders(name: string): ParamHeader[] | undefined {
    return this.tools?.get(name);
  }

  /**
   * A listed tool's execution.taskSupport; undefined for a tool not listed (yet) and every tool until some page was
   * learned.
   */
  taskSupport(name: string): TaskSupport | undefined {
    return this.taskTools?.get(name) ?? (this.toolsComplete ? 'forbidden' : undefined);
  }

  /** Some tool learned so far runs as a task (taskSupport optional or required). */
  get hasTaskTools(): boolean {
    return this.taskTools !== undefined && this.taskTools.size > 0;
  }

  /** Forgets what `method` (a change notification) made stale. */
  invalidate(method: string): void {
    if (method === 'notifications/tools/list_changed') {
      this.tools = undefined;
      this.taskTools = undefined;
      this.toolsComplete = false;
    }
  }
}
