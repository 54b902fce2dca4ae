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
  /**
   * `base`: the facts of the upstream's scout session on this replica (subscriptions/standing.ts),
   * Causeway's own: what they say of a tool stands until this session's own tools were read, so a
   * new session need not read them for a tool the scout listed.
   */
  constructor(private readonly base?: () => SessionFacts | undefined) {}

  /** The scout's own: every tool name it listed, so that it answers for those only. */
  static forScout(): SessionFacts {
    const facts = new SessionFacts();
    facts.listed = new Set();
    return facts;
  }

  private listed: Set<string> | undefined;

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
      this.listed?.add(name);
      // Only tools with annotations are kept: most have none, and a pooled session keeps its facts for life.
      if (headers && headers.length > 0) (this.tools ??= new Map()).set(name, headers);
      if (support !== 'forbidden') (this.taskTools ??= new Map()).set(name, support);
    }
  }

  /** A tool's Mcp-Param-* annotations; undefined when it has none or is not known (yet: see knows). */
  toolHeaders(name: string): ParamHeader[] | undefined {
    return this.tools?.get(name) ?? (this.toolsComplete ? undefined : this.scout(name)?.toolHeaders(name));
  }

  /**
   * A listed tool's execution.taskSupport; undefined for a tool not listed (yet) and every tool until some page was
   * learned.
   */
  taskSupport(name: string): TaskSupport | undefined {
    return this.taskTools?.get(name) ?? (this.toolsComplete ? 'forbidden' : this.scout(name)?.taskSupport(name));
  }

  /** Whether what is known of tool `name` is all there is: this session's tools, or the scout's, were read. */
  knows(name: string): boolean {
    return this.toolsComplete || this.scout(name) !== undefined;
  }

  /** The scout's facts, when it read every page of its tools and `name` was among them. */
  private scout(name: string): SessionFacts | undefined {
    const facts = this.base?.();
    return facts?.toolsComplete === true && facts.listed?.has(name) === true ? facts : undefined;
  }

  /**
   * Some tool runs as a task (taskSupport optional or required): of those learned so far, or, until
   * this session's own tools were read, of those the scout listed once it read them all.
   */
  get hasTaskTools(): boolean {
    if (this.taskTools !== undefined && this.taskTools.size > 0) return true;
    if (this.toolsComplete) return false;
    const scout = this.base?.();
    return scout?.toolsComplete === true && scout.hasTaskTools;
  }

  /** Whether every tool is known: this session's own were read, or the scout read all of its own (see knows). */
  get knowsAll(): boolean {
    return this.toolsComplete || this.base?.()?.toolsComplete === true;
  }

  /** Forgets what `method` (a change notification) made stale. */
  invalidate(method: string): void {
    if (method === 'notifications/tools/list_changed') {
      this.listed?.clear();
      this.tools = undefined;
      this.taskTools = undefined;
      this.toolsComplete = false;
    }
  }
}
