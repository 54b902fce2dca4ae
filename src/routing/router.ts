// Which member of a federated mount serves a request: a route rule that pins it, else the member
// whose prefix a tool or prompt name carries (else the one that listed it), for resources/read
// the member that listed the URI or a matching template, for completion/complete its ref. A
// name the owner index does not know yet is looked for once in fresh merged lists.

import { causewayError } from '../errors.js';
import { isObject } from '../jsonrpc.js';
import type { ModernRequest } from '../envelope/index.js';
import { LISTS, type Asked, type Member, type Merger } from './merge.js';
import { pinnedUpstream, type CompiledRule } from './rules.js';

/** The member that serves a request, and the request as it must see it (its own names). */
export type Routed = { member: Member; request: ModernRequest };

export class Router {
  constructor(
    private readonly members: readonly Member[],
    private readonly rules: readonly CompiledRule[],
    private readonly merger: Merger,
  ) {}

  async route(ex: Asked): Promise<Routed> {
    const { request } = ex;
    const pinned = pinnedUpstream(this.rules, request.method, request.name);
    if (pinned !== undefined) {
      const member = this.member(pinned);
      return { member, request: unprefixed(request, member) };
    }
    switch (request.method) {
      case 'tools/call':
      case 'prompts/get': {
        const member = await this.ownerOfName(ex, request.method === 'tools/call' ? 'tools' : 'prompts', request.name!);
        return { member, request: unprefixed(request, member) };
      }
      case 'resources/read':
        return { member: await this.ownerOfUri(ex, request.name!), request };
      case 'completion/complete':
        return this.routeCompletion(ex);
      default:
        throw causewayError('method_not_found', `Method not found: ${request.method}`);
    }
  }

  private async routeCompletion(ex: Asked): Promise<Routed> {
    const ref = ex.request.params.ref;
    if (isObject(ref) && ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const member = await this.ownerOfName(ex, 'prompts', ref.name);
      return { member, request: unprefixed(ex.request, member) };
    }
    if (isObject(ref) && ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      return { member: await this.ownerOfUri(ex, ref.uri), request: ex.request };
    }
    throw causewayError('invalid_params', 'completion/complete needs a ref/prompt or ref/resource ref');
  }

  private member(name: string): Member {
    const m = this.members.find((x) => x.name === name);
    if (!m) throw new Error(`no member ${name}`);
    return m;
  }

  /** The prefix a name carries names its member; without one, the member that listed it. */
  private async ownerOfName(ex: Asked, kind: 'tools' | 'prompts', name: string): Promise<Member> {
    let best: Member | undefined;
    for (const m of this.members) {
      if (m.prefix !== '' && name.startsWith(m.prefix) && (best === undefined || m.prefix.length > best.prefix.length))
        best = m;
    }
    if (best) return best;
    const { scope } = ex;
    let owner = this.merger.ownerIndex(scope)?.[kind].get(name);
    if (owner === undefined) {
      const method = kind === 'tools' ? 'tools/list' : 'prompts/list';
      await this.merger.mergedItems(ex, LISTS[method]!, method);
      owner = this.merger.ownerIndex(scope)?.[kind].get(name);
    }
    if (owner === undefined)
      throw causewayError('unknown_name', `Unknown ${kind === 'tools' ? 'tool' : 'prompt'}: ${name}`);
    return this.members[owner]!;
  }

  private async ownerOfUri(ex: Asked, uri: string): Promise<Member> {
    const [owner] = await this.ownersOfUris(ex, [uri]);
    if (owner === undefined) throw causewayError('unknown_name', 'Resource not found', { uri });
    return owner;
  }

  /** The member owning each URI (undefined: none), refreshing the resource lists at most once. */
  async ownersOfUris(ex: Asked, uris: readonly string[]): Promise<Array<Member | undefined>> {
    const { scope } = ex;
    const lookup = (uri: string): number | undefined => {
      const index = this.merger.ownerIndex(scope);
      if (!index) return undefined;
      return index.resources.get(uri) ?? index.templates.find((t) => t.match.test(uri))?.member;
    };
    let owners = uris.map(lookup);
    if (owners.some((o) => o === undefined)) {
      await this.merger.mergedItems(ex, LISTS['resources/list']!, 'resources/list');
      await this.merger.mergedItems(ex, LISTS['resources/templates/list']!, 'resources/templates/list');
      // A member that serves resources nobody listed (dynamic ones): only safe to guess when it is the only one.
      const holders = this.merger.ownerIndex(scope)?.resourceMembers ?? [];
      owners = uris.map((uri) => lookup(uri) ?? (holders.length === 1 ? holders[0] : undefined));
    }
    return owners.map((o) => (o === undefined ? undefined : this.members[o]));
  }
}

/** The request as `member` knows it: its prefix taken off the tool or prompt name (or a completion's prompt ref). */
function unprefixed(request: ModernRequest, member: Member): ModernRequest {
  const strip = (n: string) =>
    member.prefix !== '' && n.startsWith(member.prefix) ? n.slice(member.prefix.length) : n;
  const ref = request.params.ref;
  if (
    request.method === 'completion/complete' &&
    isObject(ref) &&
    ref.type === 'ref/prompt' &&
    typeof ref.name === 'string'
  ) {
    return { ...request, params: { ...request.params, ref: { ...ref, name: strip(ref.name) } } };
  }
  if (request.spec.nameParam !== 'name' || request.name === undefined) return request;
  const name = strip(request.name);
  return name === request.name ? request : { ...request, name, params: { ...request.params, name } };
}
