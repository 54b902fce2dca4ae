// A mount's view applied (a virtual server): on the way in, a call's name as its client sees it
// is mapped back to the one the mount serves, or refused as the upstream refuses an unknown one
// (-32602) before anything is sent (a listen only loses the hidden URIs); on the way out, a list
// loses what the view hides and shows the new names and descriptions. It is a ListLens, as a
// token's grant is (auth/grant.ts): every stage that writes a list answer already looks through
// the request's lens, after the cache and after a federation's merge, so two mounts over one
// upstream share what is kept underneath.

import { causewayError } from '../errors.js';
import { isObject, type JsonObject } from '../jsonrpc.js';
import { VIEW_KINDS, visibleTest, type KindSpec, type ViewKind, type ViewSpec } from './spec.js';

/** What a request may see of a list answer: a token's grant (auth.rules), a mount's view, or both. */
export interface ListLens {
  /** Whether filterList could change an answer of this method: else it need not be read at all. */
  mayHide(method: string): boolean;
  filterList(method: string, result: JsonObject): JsonObject;
}

/** The lists a view rewrites: where their items are, what names each, and which part of the view applies. */
const LISTED: Readonly<Record<string, { kind: ViewKind; items: string; key: string }>> = {
  'tools/list': { kind: 'tools', items: 'tools', key: 'name' },
  'prompts/list': { kind: 'prompts', items: 'prompts', key: 'name' },
  'resources/list': { kind: 'resources', items: 'resources', key: 'uri' },
  'resources/templates/list': { kind: 'resources', items: 'resourceTemplates', key: 'uriTemplate' },
};

/** The requests that name what a view may hide: the part of the view, and the param naming it. */
const NAMED: Readonly<Record<string, { kind: ViewKind; key: string }>> = {
  'tools/call': { kind: 'tools', key: 'name' },
  'prompts/get': { kind: 'prompts', key: 'name' },
  'resources/read': { kind: 'resources', key: 'uri' },
  'resources/subscribe': { kind: 'resources', key: 'uri' },
  'resources/unsubscribe': { kind: 'resources', key: 'uri' },
};

/** One kind's part of a view, compiled. */
class KindView {
  private readonly shown: (name: string) => boolean;
  private readonly rename: ReadonlyMap<string, string>;
  /** New name -> the name the mount serves. */
  private readonly back: ReadonlyMap<string, string>;
  private readonly describe: ReadonlyMap<string, string>;

  constructor(spec: KindSpec) {
    this.shown = visibleTest(spec);
    this.rename = new Map(Object.entries(spec.rename));
    this.back = new Map(Object.entries(spec.rename).map(([from, to]) => [to, from]));
    this.describe = new Map(Object.entries(spec.describe));
  }

  /** The name the mount serves for one a client sent; undefined when the view shows no such name. */
  source(visible: string): string | undefined {
    const from = this.back.get(visible);
    if (from !== undefined) return from;
    if (this.rename.has(visible)) return undefined;
    return this.shown(visible) ? visible : undefined;
  }

  /** Whether a name the mount serves is out of the view (hidden, or shadowed by another renamed to it). */
  hides(name: string): boolean {
    return !this.shown(name) || (!this.rename.has(name) && this.back.has(name));
  }

  /** A list item as clients see it; undefined when hidden. */
  item(item: unknown, key: string): unknown {
    const name = isObject(item) ? item[key] : undefined;
    if (typeof name !== 'string') return item;
    if (this.hides(name)) return undefined;
    const to = this.rename.get(name);
    const description = this.describe.get(name);
    if (to === undefined && description === undefined) return item;
    return {
      ...(item as JsonObject),
      ...(to === undefined ? {} : { [key]: to }),
      ...(description === undefined ? {} : { description }),
    };
  }
}

export class ViewFilter implements ListLens {
  private readonly kinds = new Map<ViewKind, KindView>();

  constructor(spec: ViewSpec) {
    for (const kind of VIEW_KINDS) {
      const part = spec[kind];
      if (part) this.kinds.set(kind, new KindView(part));
    }
  }

  mayHide(method: string): boolean {
    const listed = LISTED[method];
    return listed !== undefined && this.kinds.has(listed.kind);
  }

  filterList(method: string, result: JsonObject): JsonObject {
    const listed = LISTED[method];
    const view = listed && this.kinds.get(listed.kind);
    const items = listed && result[listed.items];
    if (!view || !Array.isArray(items)) return result;
    const seen = items.map((i) => view.item(i, listed.key)).filter((i) => i !== undefined);
    return { ...result, [listed.items]: seen as JsonObject[] };
  }

  /** Whether a name of a list kind is out of the view (a federation's conflict on it concerns no client). */
  hides(kind: 'tools' | 'prompts' | 'resources' | 'resourceTemplates', name: string): boolean {
    return this.kinds.get(kind === 'resourceTemplates' ? 'resources' : kind)?.hides(name) === true;
  }

  /** Whether a request of `method` naming `name` reaches what the view shows (true when it names nothing). */
  shows(method: string, name: string | undefined): boolean {
    const named = NAMED[method];
    const view = named === undefined ? undefined : this.kinds.get(named.kind);
    return view === undefined || name === undefined || view.source(name) !== undefined;
  }

  /**
   * A request's params as the mount serves them: the name a client sent mapped back to the one
   * the mount serves. Throws unknown_name (-32602, as an upstream answers an unknown tool) for a
   * name the view does not show; any other request's params come back as they are.
   */
  inbound(method: string, params: JsonObject): JsonObject {
    const named = NAMED[method];
    if (named !== undefined) return this.mapped(params, named.kind, named.key);
    if (method === 'subscriptions/listen') return this.listened(params);
    const ref = params.ref;
    if (method !== 'completion/complete' || !isObject(ref)) return params;
    const mapped =
      ref.type === 'ref/prompt'
        ? this.mapped(ref, 'prompts', 'name')
        : ref.type === 'ref/resource'
          ? this.mapped(ref, 'resources', 'uri')
          : ref;
    return mapped === ref ? params : { ...params, ref: mapped };
  }

  /** A listen's resource subscriptions without the URIs the view hides: its acknowledgment leaves them out. */
  private listened(params: JsonObject): JsonObject {
    const view = this.kinds.get('resources');
    const n = params.notifications;
    const uris = isObject(n) ? n.resourceSubscriptions : undefined;
    if (view === undefined || !Array.isArray(uris)) return params;
    const kept = uris.filter((u) => typeof u !== 'string' || view.source(u) !== undefined);
    if (kept.length === uris.length) return params;
    return { ...params, notifications: { ...(n as JsonObject), resourceSubscriptions: kept } };
  }

  private mapped(holder: JsonObject, kind: ViewKind, key: string): JsonObject {
    const view = this.kinds.get(kind);
    const name = holder[key];
    if (view === undefined || typeof name !== 'string') return holder;
    const source = view.source(name);
    if (source === undefined) throw unknown(kind, name);
    return source === name ? holder : { ...holder, [key]: source };
  }
}

function unknown(kind: ViewKind, name: string) {
  if (kind === 'resources') return causewayError('unknown_name', 'Resource not found', { uri: name });
  return causewayError('unknown_name', `Unknown ${kind === 'tools' ? 'tool' : 'prompt'}: ${name}`);
}

/** What a modern exchange needs of its request to be seen through a view. */
interface Viewed {
  request: { method: string; params: JsonObject; name: string | undefined; spec: { nameParam?: string } };
  access?: ListLens;
  body?: Uint8Array;
  shownName?: string;
}

/**
 * A modern request as the mount serves it (its names mapped back through the view), seeing lists
 * through the view and then its grant; throws unknown_name for a name the view hides.
 */
export function viewedExchange<E extends Viewed>(ex: E, view: ViewFilter): E {
  const { request } = ex;
  const access = throughView(view, ex.access);
  const params = view.inbound(request.method, request.params);
  if (params === request.params) return { ...ex, access };
  const named = request.spec.nameParam === undefined ? undefined : params[request.spec.nameParam];
  const name = typeof named === 'string' ? named : request.name;
  // The client's bytes name what the view showed it: the request is written again from its params.
  const shown = request.name === name ? {} : { shownName: request.name };
  return { ...ex, access, request: { ...request, params, name }, body: undefined, ...shown };
}

/** A view, then a token's grant (whose rules speak of the names the client sees). */
export function throughView(view: ListLens, then: ListLens | undefined): ListLens {
  if (then === undefined) return view;
  return {
    mayHide: (method) => view.mayHide(method) || then.mayHide(method),
    filterList: (method, result) => then.filterList(method, view.filterList(method, result)),
  };
}
