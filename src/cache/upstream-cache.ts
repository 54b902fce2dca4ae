// The gateway cache as one upstream's requests use it: their queries, and how long an answer is
// kept, by era.
// - A modern upstream's answer is kept as its own ttlMs and cacheScope say and never longer; one
//   without both (or with ttlMs 0) is not kept [CACHE].
// - A legacy upstream's answer carries no hints: the cache.* policy gives them. The gateway keeps
//   it for the policy's ttlMs, or for cache.keepMs where a change notification would drop it
//   sooner (the upstream declared listChanged and Causeway holds a stream that carries it), never
//   past store.idleTtlMs: a session ends only after that long unused, and its stream with it.

import { isObject, type JsonObject, type JsonRpcNotification } from '../jsonrpc.js';
import type { Fill, GatewayCache } from './gateway-cache.js';
import { cacheQuery, wholeListQuery, type CacheQuery } from './keys.js';
import type { CacheScope } from '../metrics/index.js';
import type { Entry } from './memory-tier.js';

/** The legacy session an answer was read on, as far as keeping it goes. */
export interface LegacySession {
  /** What the upstream declared at initialize. */
  capabilities: unknown;
  /** Its GET stream is held (upstream.standingStream): what the upstream sends outside a call reaches Causeway. */
  streamHeld: boolean;
  /** Its pool key id. */
  id: string;
}

/** The capability whose listChanged says the upstream tells of a change to a list [LIST]. */
const CHANGE_CAPABILITY: Readonly<Record<string, string>> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resources',
};

/**
 * Whether a change to the answer would reach Causeway: the upstream declared listChanged for it
 * and the session's stream, which carries such notifications, is held. Discover changes only with
 * its session, whose replacement drops it.
 */
function heardChange(method: string, session: LegacySession): boolean {
  if (method === 'server/discover') return true;
  const capability = CHANGE_CAPABILITY[method];
  if (capability === undefined || !session.streamHeld) return false;
  const caps = session.capabilities;
  const declared = isObject(caps) ? caps[capability] : undefined;
  return isObject(declared) && declared.listChanged === true;
}

export class UpstreamCache {
  constructor(
    private readonly cache: GatewayCache,
    readonly upstream: string,
    /** cache.keepMs: the longest a legacy answer is kept when a change notification would drop it. */
    private readonly keepMs: number,
  ) {}

  query(method: string, params: JsonObject, who: string, authorization: string | undefined): CacheQuery {
    return cacheQuery(this.upstream, method, params, who, authorization);
  }

  /** Every page of this upstream's list `method`, as a federated mount merges it (keys.ts wholeListQuery). */
  wholeList(method: string, who: string, authorization: string | undefined): CacheQuery {
    return wholeListQuery(this.upstream, method, who, authorization);
  }

  through<T>(
    q: CacheQuery,
    scope: CacheScope | undefined,
    hit: (e: Entry) => T,
    miss: (fill: Fill) => Promise<T>,
  ): Promise<T> {
    return this.cache.through(q, scope, hit, miss);
  }

  peek(q: CacheQuery, scope: CacheScope | undefined): Promise<Entry | undefined> {
    return this.cache.peek(q, scope);
  }

  /** A legacy answer given `hint` by the policy, read on `session`. */
  keepLegacy(
    q: CacheQuery,
    fill: Fill,
    result: JsonObject,
    hint: { ttlMs: number; cacheScope: CacheScope },
    session: LegacySession,
  ): void {
    const keepMs = heardChange(q.method, session) ? Math.max(hint.ttlMs, this.keepMs) : hint.ttlMs;
    this.cache.store(q, fill, result, { scope: hint.cacheScope, ttlMs: hint.ttlMs, keepMs, session: session.id });
  }

  /** A modern answer, kept as its hints say. */
  keepModern(q: CacheQuery, fill: Fill, result: JsonObject): void {
    const { ttlMs, cacheScope, resultType } = result;
    if (
      resultType !== 'complete' ||
      typeof ttlMs !== 'number' ||
      !(ttlMs > 0) ||
      (cacheScope !== 'public' && cacheScope !== 'private')
    ) {
      // Nothing to keep: until one is kept, the next misses of this method skip the shared tier.
      if (resultType === 'complete') this.cache.unkept(q);
      return;
    }
    this.cache.store(q, fill, result, { scope: cacheScope, ttlMs, keepMs: ttlMs });
  }

  answer(id: Parameters<GatewayCache['answer']>[0], e: Entry, see?: (result: JsonObject) => JsonObject): string {
    return this.cache.answer(id, e, see);
  }

  result(e: Entry): JsonObject {
    return this.cache.result(e);
  }

  changed(n: JsonRpcNotification): void {
    this.cache.changed(this.upstream, n);
  }
}
