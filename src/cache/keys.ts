// What the gateway cache keys an answer by [CACHE]: the upstream, the method, the parameters
// that change the answer (everything but `_meta`: a list's cursor, a read's uri) and, for a
// private answer, the authorization context it was given in: who asked and, when the request
// carried a token, that token ("a different access token requires a different cache").

import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../jsonrpc.js';

/** The results 2026-07-28 lets a cache keep [CACHE]. */
export const CACHEABLE_METHODS: ReadonlySet<string> = new Set([
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

/**
 * A cacheable request: one of the methods, and not the retry of a multi-round request (one that
 * carries inputResponses or requestState), whose answer MUST NOT be cached [CACHE].
 */
export function isCacheable(method: string, params: JsonObject): boolean {
  return CACHEABLE_METHODS.has(method) && params.inputResponses === undefined && params.requestState === undefined;
}

/** A request as the cache sees it. */
export interface CacheQuery {
  upstream: string;
  method: string;
  /** upstream, method and parameters: the public entry's key, and the start of the private one's. */
  base: string;
  /** The authorization context of a private entry. */
  context: string;
  /** resources/read's uri: a resources/updated for it drops the entry. */
  uri: string | undefined;
}

/**
 * `who`: whose answers a private entry may serve (the principal hash, or a legacy session's key,
 * which adds the capabilities the session was opened with); `authorization`: the request's
 * Authorization header, kept only as a digest.
 */
export function cacheQuery(
  upstream: string,
  method: string,
  params: JsonObject,
  who: string,
  authorization: string | undefined,
): CacheQuery {
  const uri = method === 'resources/read' && typeof params.uri === 'string' ? params.uri : undefined;
  const context =
    authorization === undefined
      ? who
      : `${who}\u0001${createHash('sha256').update(authorization).digest('base64url').slice(0, 22)}`;
  return { upstream, method, base: `${upstream}\u0000${method}\u0000${paramsKey(params)}`, context, uri };
}

/**
 * A list as a federated mount merges it: every page of one member's list, read for `who`. Its
 * base ends in `*`, which no request's parameters can write (paramsKey starts each with a quote),
 * so no client's request finds or fills it; a change to the list drops it with the method's others.
 */
export function wholeListQuery(upstream: string, method: string, who: string, auth: string | undefined): CacheQuery {
  const q = cacheQuery(upstream, method, {}, who, auth);
  return { ...q, base: `${q.base}*` };
}

export function publicKey(q: CacheQuery): string {
  return q.base;
}

export function privateKey(q: CacheQuery): string {
  return `${q.base}\u0000${q.context}`;
}

/** Entries of one upstream's method: dropped together by a list change. */
export function groupOf(upstream: string, method: string): string {
  return `${upstream}\u0000${method}`;
}

/** The parameters as text, `_meta` left out and keys in order, so that equal requests key equal. */
export function paramsKey(params: JsonObject): string {
  let out = '';
  for (const k of Object.keys(params).sort()) {
    if (k === '_meta') continue;
    out += `${JSON.stringify(k)}:${stable(params[k]!)},`;
  }
  return out;
}

function stable(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${stable((v as JsonObject)[k]!)}`)
    .join(',')}}`;
}

/** The change notifications methodsChangedBy knows: between them, they make every kind of entry stale. */
export const CHANGE_NOTIFICATIONS = [
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
  'notifications/resources/updated',
] as const;

/** The methods whose entries a change notification makes stale [CACHE][SUBS]. */
export function methodsChangedBy(notification: string): readonly string[] {
  switch (notification) {
    case 'notifications/tools/list_changed':
      // Discover too: whether it advertises the tasks extension can follow the tools' taskSupport.
      return ['tools/list', 'server/discover'];
    case 'notifications/prompts/list_changed':
      return ['prompts/list'];
    case 'notifications/resources/list_changed':
      return ['resources/list', 'resources/templates/list'];
    case 'notifications/resources/updated':
      return ['resources/read'];
    default:
      return [];
  }
}
