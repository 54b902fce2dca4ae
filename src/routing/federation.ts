// One mount in front of several different servers, legacy or 2026: the routing stage the pipeline
// asks, for each request, whether it is answered from every member (server/discover and the
// lists, by the Merger; subscriptions/listen, one stream over every legacy member's session and
// every 2026 member's own listen, with each resource subscription on the member owning the URI)
// or routed to one member (by the Router), on which the rest of the pipeline then runs.

import { isObject, type JsonObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { sessionKeyFor } from './session-keys.js';
import type { UpstreamMetrics } from '../metrics/index.js';
import type { Answered, ModernExchange } from './exchange.js';
import type { ListenPart, Subscriptions } from '../subscriptions/index.js';
import { holdsTask, modernListen, modernSide } from './modern-member.js';
import { LISTS, Merger, type Asked, type Conflict, type Member } from './merge.js';
import { ANONYMOUS } from '../auth/index.js';
import { Router, type Routed } from './router.js';
import type { CompiledRule } from './rules.js';
import { BoundedMap } from '../bounded.js';
import type { ViewFilter } from '../view/index.js';

export type { Conflict, Member } from './merge.js';
export type { Routed } from './router.js';

export interface FederationOptions {
  path: string;
  members: Member[];
  rules: CompiledRule[];
  pageSize: number;
  /** serverInfo of the merged server/discover and lists. */
  serverInfo: JsonObject;
  /** Records merged answers (discover, lists) and errors met before a member is chosen. */
  metrics: UpstreamMetrics;
  /** The replica's listen streams, one of which follows every member. */
  subscriptions: Subscriptions;
  log: Logger;
  /** The mount's view: conflicts on names it hides are not reported. */
  view?: ViewFilter;
}

/** URIs of one listen request whose owner is looked up. */
const MAX_LISTEN_URIS = 1000;
/** 2026 members' tasks whose owner one replica remembers. */
const MAX_TASK_OWNERS = 10_000;

export class Federation {
  private readonly merger: Merger;
  private readonly router: Router;
  /** 2026 members' own tasks found so far, by principal scope and task id; oldest first. */
  private readonly taskOwners = new BoundedMap<string, Member>(MAX_TASK_OWNERS);

  constructor(private readonly opts: FederationOptions) {
    this.merger = new Merger(opts);
    this.router = new Router(opts.members, opts.rules, this.merger);
  }

  get path(): string {
    return this.opts.path;
  }

  /** Distinct name conflicts seen so far (start-up check and live merges). */
  get conflictCount(): number {
    return this.merger.conflictCount;
  }

  /** Records merged answers (discover, lists, listen) and errors met before a member is chosen. */
  get metrics(): UpstreamMetrics {
    return this.opts.metrics;
  }

  /**
   * What this mount does with a request, for the pipeline: answer it from every member (discover,
   * lists, listen: `merged` answers and says how), or name the member that serves it and the
   * request as that member must see it (`route`, which throws the typed error when none does).
   */
  plan(exchange: ModernExchange): { merged: () => Promise<Answered> } | { route: () => Promise<Routed> } {
    // Owner indexes are per principal and capability set, as the lists may differ between them.
    const scope = sessionKeyFor('', exchange.principal, exchange.request.meta.clientCapabilities).id;
    const ex: Asked = { ...exchange, scope };
    const method = ex.request.method;
    if (method === 'server/discover') return { merged: () => this.merger.discover(ex) };
    if (method === 'subscriptions/listen') return { merged: () => this.listen(ex) };
    const shape = LISTS[method];
    if (shape) return { merged: () => this.merger.list(ex, shape) };
    if (ex.request.spec.task) return { route: () => this.routeTask(ex) };
    return { route: () => this.router.route(ex) };
  }

  /**
   * A task is served by the member it was created on: one Causeway holds (its record names the
   * member), else a 2026 member's own, found by asking each 2026 member once (then remembered
   * for the client); an unknown one by the first, which says so.
   */
  private async routeTask(ex: Asked): Promise<Routed> {
    const { members } = this.opts;
    const taskId = ex.request.name!;
    const held = await members[0]!.deps.tasks.upstreamOf(ex.principal, taskId);
    const member = members.find((m) => m.name === held) ?? (await this.modernTaskOwner(ex, taskId)) ?? members[0]!;
    return { request: ex.request, member };
  }

  private async modernTaskOwner(ex: Asked, taskId: string): Promise<Member | undefined> {
    const slot = `${ex.scope}#${taskId}`;
    const known = this.taskOwners.get(slot);
    if (known) return known;
    const { principal, signal, headers } = ex;
    const { clientCapabilities: caps, clientInfo } = ex.request.meta;
    const ask = { principal, caps, clientInfo, headers, signal };
    for (const m of this.opts.members) {
      const modern = await modernSide(m.deps, signal);
      if (!modern || !(await holdsTask(m.deps, modern, taskId, ask))) continue;
      this.taskOwners.set(slot, m);
      return m;
    }
    return undefined;
  }

  /** Merges every list for an anonymous principal and reports each name conflict found (see Merger.check). */
  check(): Promise<Conflict[]> {
    return this.merger.check(ANONYMOUS);
  }

  /**
   * One listen stream over every member's session; a resource subscription goes to the URI's owner (unknown URIs are
   * not held).
   */
  private async listen(ex: Asked): Promise<Answered> {
    const { principal } = ex;
    const caps = ex.request.meta.clientCapabilities;
    const notifications = ex.request.params.notifications;
    const asked =
      isObject(notifications) && Array.isArray(notifications.resourceSubscriptions)
        ? notifications.resourceSubscriptions
        : [];
    // Bounded before the listen itself checks the request (subscriptions.maxUrisPerListen).
    const uris = asked.filter((u): u is string => typeof u === 'string').slice(0, MAX_LISTEN_URIS);
    const owned: string[][] = this.opts.members.map(() => []);
    (await this.router.ownersOfUris(ex, uris)).forEach((owner, i) => {
      if (owner) owned[this.opts.members.indexOf(owner)]!.push(uris[i]!);
    });
    const { signal, headers } = ex;
    const ask = { principal, caps, clientInfo: ex.request.meta.clientInfo, headers, signal };
    const parts = await Promise.all(
      this.opts.members.map(async (m, i): Promise<ListenPart> => {
        const modern = await modernSide(m.deps, signal);
        const uris = owned[i]!;
        if (modern) return { remote: modernListen(m.deps, modern, ask), uris };
        return { key: sessionKeyFor(m.name, principal, caps), uris };
      }),
    );
    await this.opts.subscriptions.listen({ ...ex, parts });
    return 'complete';
  }
}
