// Merged answers of a federated mount: server/discover and the four list methods answered by
// Causeway from every member. Tool and prompt names get the member's prefix; the merged list is
// sorted and paged by Causeway with its own opaque cursors over one snapshot per walk. A name two
// members both expose is a conflict: the first member in the mount's order (or the one a route
// rule pins the name to) keeps it, and the conflict is logged once and counted. Each merge also
// records who owns what (OwnerIndex), which the router reads.

import { randomBytes } from 'node:crypto';
import {
  discoverResult,
  normalizeToolsList,
  TASKS_EXTENSION,
  toolFacts,
  withResultMeta,
  type CacheHint,
} from '../dialect/index.js';
import { sendJson } from '../egress/index.js';
import { invalidCursor, readCursorFields } from '../envelope/index.js';
import { causewayError } from '../errors.js';
import { isObject, type JsonObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { sessionKeyFor } from './session-keys.js';
import type { Answered, ModernDeps, ModernExchange, ModernSide } from './exchange.js';
import { sessionRef, type PooledSession } from '../pool/index.js';
import { callHeaders, walkList } from '../upstream/index.js';
import { pinnedUpstream, type CompiledRule } from './rules.js';
import { holdsTasks } from '../tasks/index.js';
import { learnTools } from './tool-facts.js';
import { modernDiscover, modernSide, modernWalk, type MemberAsk } from './modern-member.js';
import { BoundedMap } from '../bounded.js';

export interface Member {
  name: string;
  /** The expanded prefix of this member's tool and prompt names ('' for none). */
  prefix: string;
  deps: ModernDeps;
}

export interface Conflict {
  kind: ListKind;
  name: string;
  /** Every member exposing the name, the one that keeps it first. */
  upstreams: string[];
}

type ListKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

export interface ListShape {
  kind: ListKind;
  key: 'name' | 'uri' | 'uriTemplate';
  capability: 'tools' | 'prompts' | 'resources';
  /** The method whose name a route rule must match to pin this list's items. */
  routedBy: string;
  prefixed: boolean;
}

export const LISTS: Readonly<Record<string, ListShape>> = {
  'tools/list': { kind: 'tools', key: 'name', capability: 'tools', routedBy: 'tools/call', prefixed: true },
  'prompts/list': { kind: 'prompts', key: 'name', capability: 'prompts', routedBy: 'prompts/get', prefixed: true },
  'resources/list': {
    kind: 'resources',
    key: 'uri',
    capability: 'resources',
    routedBy: 'resources/read',
    prefixed: false,
  },
  'resources/templates/list': {
    kind: 'resourceTemplates',
    key: 'uriTemplate',
    capability: 'resources',
    routedBy: 'resources/read',
    prefixed: false,
  },
};

/** Upstream pages read per member and list before Causeway stops following nextCursor. */
const MAX_UPSTREAM_PAGES = 100;
/** Principal x capability sets whose owner index is kept. */
const MAX_INDEXES = 1024;
/**
 * Merged lists kept so that a client walking the pages sees one snapshot and the members are
 * listed once per walk, not once per page. A cursor names its snapshot; past this age, or on
 * another replica, the next page is merged afresh at the cursor's offset.
 */
const MAX_SNAPSHOTS = 64;
const SNAPSHOT_TTL_MS = 60_000;

/** Who owns what, as learned from the merged lists of one principal and capability set. */
export interface OwnerIndex {
  tools: Map<string, number>;
  prompts: Map<string, number>;
  resources: Map<string, number>;
  templates: Array<{ match: RegExp; member: number }>;
  /** Members that advertise resources, from the last resources merge. */
  resourceMembers: number[];
}

/**
 * A request with the scope owner indexes and snapshots are kept by (its principal and capabilities), worked out once.
 */
export type Asked = ModernExchange & { scope: string };

interface Snapshot {
  id: string;
  items: JsonObject[];
  expiresAt: number;
}

export interface MergeOptions {
  path: string;
  members: Member[];
  rules: CompiledRule[];
  pageSize: number;
  /** serverInfo of the merged server/discover and lists. */
  serverInfo: JsonObject;
  log: Logger;
  /** The mount's view: a conflict on a name it hides concerns none of its clients. */
  view?: { hides(kind: ListKind, name: string): boolean };
}

export class Merger {
  private readonly indexes = new BoundedMap<string, OwnerIndex>(MAX_INDEXES);
  /** By scope, method and id; oldest first. */
  private readonly snapshots = new BoundedMap<string, Snapshot>(MAX_SNAPSHOTS);
  private readonly conflicts = new Map<string, Conflict>();

  constructor(private readonly opts: MergeOptions) {}

  /** Distinct name conflicts seen so far (start-up check and live merges). */
  get conflictCount(): number {
    return this.conflicts.size;
  }

  /** Who owns what for one principal scope, as the last merges found it. */
  ownerIndex(scope: string): OwnerIndex | undefined {
    return this.indexes.get(scope);
  }

  /**
   * Merges every list for `principal` (no capabilities) and reports each name conflict found.
   * Members that cannot be reached are logged and left out; the check never fails start-up.
   */
  async check(principal: string): Promise<Conflict[]> {
    const found: Conflict[] = [];
    const unreachable = new Set<string>();
    for (const [method, shape] of Object.entries(LISTS)) {
      const lists = await Promise.all(
        this.opts.members.map((m) => {
          if (unreachable.has(m.name)) return undefined;
          const signal = AbortSignal.timeout(m.deps.bridge.upstreamTimeoutMs);
          const read = { m, method, shape, principal, caps: {}, clientInfo: undefined, headers: {}, signal };
          return this.fetchAll(read).catch((err: unknown) => {
            unreachable.add(m.name);
            this.opts.log.warn(
              { upstream: m.name, method, err: (err as Error).message },
              'federation check could not list an upstream; its names are checked when first merged',
            );
            return undefined;
          });
        }),
      );
      found.push(...this.merge(shape, lists).conflicts);
    }
    return found;
  }

  async discover(ex: Asked): Promise<Answered> {
    const { principal, signal, headers } = ex;
    const { clientCapabilities: caps, clientInfo } = ex.request.meta;
    // A legacy member's session (its initialize result), or a 2026 member's own discover result.
    const answers = await Promise.all(
      this.opts.members.map(async (m) => {
        const modern = await modernSide(m.deps, signal);
        const ask = { principal, caps, clientInfo, headers, signal };
        if (modern) return { init: await modernDiscover(m.deps, modern, ask) };
        const session = await m.deps.pool.acquire(sessionKeyFor(m.name, principal, caps));
        return { init: session.record.initializeResult, session };
      }),
    );
    const capabilities: JsonObject = {};
    const instructions: string[] = [];
    answers.forEach(({ init }, i) => {
      if (isObject(init.capabilities)) {
        for (const [k, v] of Object.entries(init.capabilities)) {
          if (isObject(v)) capabilities[k] = { ...(isObject(capabilities[k]) ? capabilities[k] : {}), ...v };
        }
      }
      if (typeof init.instructions === 'string' && init.instructions !== '')
        instructions.push(`[${this.opts.members[i]!.name}] ${init.instructions}`);
    });
    const merged: JsonObject = { capabilities, serverInfo: this.opts.serverInfo };
    if (instructions.length > 0) merged.instructions = instructions.join('\n\n');
    // The extension, where Causeway holds some legacy member's tools as tasks (a legacy member's
    // own tasks come in its capabilities), or a 2026 member runs tasks itself.
    const holds = await Promise.all(
      answers.map(({ init, session }, i) => {
        if (session === undefined) return isObject(init.capabilities) && declaresTasksExtension(init.capabilities);
        return holdsTasks(ex, this.opts.members[i]!.deps, session, learnTools);
      }),
    );
    sendJson(ex.res, 200, {
      jsonrpc: '2.0',
      id: ex.request.id,
      result: discoverResult(merged, this.cacheHint('server/discover'), holds.some(Boolean)),
    });
    return 'complete';
  }

  async list(ex: Asked, shape: ListShape): Promise<Answered> {
    const { request } = ex;
    const cursor = readCursor(request.params.cursor, request.method);
    // Keyed by principal scope too: a cursor passed to another principal never shows it this one's list.
    const slot = `${ex.scope}#${request.method}#`;
    let snapshot = cursor === undefined ? undefined : this.snapshots.get(slot + cursor.snapshot);
    if (snapshot === undefined || snapshot.expiresAt < Date.now()) {
      snapshot = {
        id: randomBytes(6).toString('base64url'),
        items: await this.mergedItems(ex, shape, request.method),
        expiresAt: Date.now() + SNAPSHOT_TTL_MS,
      };
      this.snapshots.set(slot + snapshot.id, snapshot);
    }
    const { items } = snapshot;
    // The list may have shrunk since the cursor was issued: an offset past the end is an empty last page.
    const offset = Math.min(cursor?.offset ?? 0, items.length);
    const end = offset + this.opts.pageSize;
    const result: JsonObject = { [shape.kind]: items.slice(offset, end) };
    if (end < items.length) result.nextCursor = writeCursor(request.method, snapshot.id, end);
    const page = withResultMeta(result, { serverInfo: this.opts.serverInfo, cache: this.cacheHint(request.method) });
    sendJson(ex.res, 200, {
      jsonrpc: '2.0',
      id: request.id,
      result: ex.access ? ex.access.filterList(request.method, page) : page,
    });
    return 'complete';
  }

  /** Every member's full list, merged; the principal's owner index is updated from it. */
  async mergedItems(ex: Asked, shape: ListShape, method: string): Promise<JsonObject[]> {
    const { principal, signal, headers } = ex;
    const { clientCapabilities: caps, clientInfo } = ex.request.meta;
    const read = (m: Member) => this.fetchAll({ m, method, shape, principal, caps, clientInfo, headers, signal });
    const lists = await Promise.all(this.opts.members.map(read));
    if (lists.every((l) => l === undefined)) throw causewayError('method_not_found', `Method not found: ${method}`);
    const { items, owners } = this.merge(shape, lists);
    const index = this.index(ex.scope);
    if (shape.kind === 'resourceTemplates') {
      index.templates = items.map((t, i) => ({ match: templatePattern(String(t.uriTemplate)), member: owners[i]! }));
    } else {
      const map = index[shape.kind];
      map.clear();
      items.forEach((item, i) => map.set(String(item[shape.key]), owners[i]!));
      if (shape.kind === 'resources') index.resourceMembers = lists.flatMap((l, i) => (l === undefined ? [] : [i]));
    }
    return items;
  }

  /**
   * A member's whole list for `method`, or undefined when it does not advertise the capability.
   * Kept by the member's gateway cache as its own answers are (its cache.* policy, dropped by its
   * list_changed or a replaced session), so merges of a list that did not change ask no member.
   */
  private async fetchAll(read: ListRead): Promise<Listed> {
    const modern = await modernSide(read.m.deps, read.signal);
    if (modern) return this.fetchModern(read, modern);
    const { m, method, shape, principal, caps } = read;
    const { cache } = m.deps;
    if (cache === undefined) return this.walkAll(read);
    const hint = m.deps.cacheHint(method);
    const who = hint.cacheScope === 'public' ? '' : sessionKeyFor(m.name, principal, caps).id;
    const q = cache.wholeList(method, who, read.headers.authorization);
    return cache.through(
      q,
      hint.cacheScope,
      (e) => itemsOf(cache.result(e), shape),
      (fill) =>
        this.walkAll(read, (session, items) => {
          const legacy = { capabilities: session.record.initializeResult.capabilities, id: session.key.id };
          const streamHeld = m.deps.subscriptions.holdsStream(session, hint.cacheScope);
          cache.keepLegacy(q, fill, { [shape.kind]: items }, hint, { ...legacy, streamHeld });
        }),
    );
  }

  /** A 2026 member's whole list, kept by its gateway cache as the first page's own hints say. */
  private fetchModern(read: ListRead, modern: ModernSide): Promise<Listed> {
    const { m, method, shape } = read;
    const list = { method, kind: shape.kind, key: shape.key, maxPages: MAX_UPSTREAM_PAGES };
    const walk = () => modernWalk(m.deps, modern, list, read);
    const { cache } = m.deps;
    if (cache === undefined) return walk().then((w) => w?.items);
    const q = cache.wholeList(method, read.principal, read.headers.authorization);
    return cache.through(
      q,
      undefined,
      (e) => itemsOf(cache.result(e), shape),
      async (fill) => {
        const w = await walk();
        if (w === undefined) return undefined;
        const { resultType, ttlMs, cacheScope } = w.first;
        cache.keepModern(q, fill, { [shape.kind]: w.items, resultType, ttlMs, cacheScope });
        return w.items;
      },
    );
  }

  /** Every page of a member's list, read on its pooled session; `keep` is given what was read. */
  private walkAll(read: ListRead, keep?: (session: PooledSession, items: JsonObject[]) => void): Promise<Listed> {
    const { m, method, shape, principal, caps, signal } = read;
    const { deps } = m;
    return deps.pool.withSession(sessionKeyFor(m.name, principal, caps), async (session: PooledSession) => {
      const advertised = session.record.initializeResult.capabilities;
      if (!(isObject(advertised) && isObject(advertised[shape.capability]))) return undefined;
      const items: JsonObject[] = [];
      const walk = await walkList(
        deps,
        sessionRef(session),
        method,
        (page) => {
          const result = method === 'tools/list' ? normalizeToolsList(page).result : page;
          if (method === 'tools/list') session.facts.learnTools(toolFacts(page));
          const list = result[shape.kind];
          if (Array.isArray(list))
            for (const item of list) if (isObject(item) && typeof item[shape.key] === 'string') items.push(item);
        },
        { maxPages: MAX_UPSTREAM_PAGES, signal, headers: callHeaders(method, undefined) },
      );
      if (walk.error)
        throw causewayError('upstream_unavailable', `Upstream ${m.name} refused ${method}: ${walk.error.message}`);
      keep?.(session, items);
      return items;
    });
  }

  /** Prefixes, resolves conflicts, sorts. `owners[i]` is the member index of `items[i]`. */
  private merge(
    shape: ListShape,
    lists: ReadonlyArray<JsonObject[] | undefined>,
  ): { items: JsonObject[]; owners: number[]; conflicts: Conflict[] } {
    const byKey = new Map<string, { item: JsonObject; member: number; all: number[] }>();
    lists.forEach((list, member) => {
      if (!list) return;
      const prefix = shape.prefixed ? this.opts.members[member]!.prefix : '';
      for (const raw of list) {
        const key = prefix + String(raw[shape.key]);
        const item = prefix === '' ? raw : { ...raw, [shape.key]: key };
        const seen = byKey.get(key);
        if (!seen) {
          byKey.set(key, { item, member, all: [member] });
          continue;
        }
        seen.all.push(member);
        const pinned = pinnedUpstream(this.opts.rules, shape.routedBy, key);
        if (pinned === this.opts.members[member]!.name) Object.assign(seen, { item, member });
      }
    });
    const conflicts: Conflict[] = [];
    for (const [key, e] of byKey) {
      if (e.all.length < 2 || this.opts.view?.hides(shape.kind, key)) continue;
      const upstreams = [e.member, ...e.all.filter((m) => m !== e.member)].map((m) => this.opts.members[m]!.name);
      const conflict = { kind: shape.kind, name: key, upstreams };
      conflicts.push(conflict);
      const id = `${shape.kind}:${key}`;
      if (!this.conflicts.has(id)) {
        this.conflicts.set(id, conflict);
        this.opts.log.warn({ kind: shape.kind, name: key, upstreams, kept: upstreams[0] }, 'federation name conflict');
      }
    }
    const entries = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return { items: entries.map(([, e]) => e.item), owners: entries.map(([, e]) => e.member), conflicts };
  }

  /** The strictest hint of the members: the shortest ttl, private if any is. */
  private cacheHint(method: string): CacheHint {
    const hints = this.opts.members.map((m) => m.deps.cacheHint(method));
    return {
      ttlMs: Math.min(...hints.map((h) => h.ttlMs)),
      cacheScope: hints.some((h) => h.cacheScope === 'private') ? 'private' : 'public',
    };
  }

  private index(scope: string): OwnerIndex {
    let index = this.indexes.use(scope);
    if (index === undefined) {
      index = { tools: new Map(), prompts: new Map(), resources: new Map(), templates: [], resourceMembers: [] };
      this.indexes.set(scope, index);
    }
    return index;
  }
}

function writeCursor(method: string, snapshot: string, offset: number): string {
  return Buffer.from(JSON.stringify({ m: method, s: snapshot, o: offset })).toString('base64url');
}

/** The snapshot and offset a cursor Causeway issued stands for; anything else is -32602 [PAGE]. */
function readCursor(cursor: unknown, method: string): { snapshot: string; offset: number } | undefined {
  const f = readCursorFields(cursor, method, 200);
  if (f === undefined) return undefined;
  if (typeof f.s !== 'string' || typeof f.o !== 'number' || !Number.isInteger(f.o) || f.o < 0) throw invalidCursor();
  return { snapshot: f.s, offset: f.o };
}

/** An RFC 6570 template as a pattern over the URIs it can expand to (good enough to find the owner). */
export function templatePattern(template: string): RegExp {
  let out = '';
  for (const part of template.split(/(\{[^}]*\})/)) {
    if (part.startsWith('{') && part.endsWith('}')) {
      const op = part[1];
      out += op === '+' || op === '#' ? '.*' : op === '?' || op === '&' ? '(?:[?&].*)?' : '[^/?#]*';
    } else out += part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`, 's');
}

/** A member's whole list, or undefined when it does not advertise the capability. */
type Listed = JsonObject[] | undefined;

/** One member's list, as a merge reads it. */
interface ListRead extends MemberAsk {
  m: Member;
  method: string;
  shape: ListShape;
}

/** A 2026 server's capabilities declare the tasks extension. */
function declaresTasksExtension(capabilities: JsonObject): boolean {
  return isObject(capabilities.extensions) && isObject(capabilities.extensions[TASKS_EXTENSION]);
}

/** The items a kept whole list holds. */
function itemsOf(result: JsonObject, shape: ListShape): JsonObject[] {
  const list = result[shape.kind];
  return Array.isArray(list) ? list.filter(isObject) : [];
}
