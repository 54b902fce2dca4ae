// A 2026-07-28 member of a federated mount, as the merge reads it. 2026 is stateless: there is no
// session to open, so its server/discover and each page of its lists are asked with the client's
// own envelope (its capabilities and clientInfo), through the member's modern client, its
// credentials and forwarded headers. Its era is the member's own (upstream.era, found once).

import { causewayError } from '../errors.js';
import { isObject, type JsonObject, type JsonRpcNotification, type JsonRpcRequest } from '../jsonrpc.js';
import type { ListenFilter, RemoteListen } from '../subscriptions/index.js';
import { MODERN_VERSION } from '../upstream/index.js';
import { VERSION } from '../version.js';
import type { ModernDeps, ModernSide } from './exchange.js';

/** The modern side of a member found to speak 2026-07-28, or undefined for a legacy one. */
export async function modernSide(deps: ModernDeps, signal: AbortSignal): Promise<ModernSide | undefined> {
  const modern = deps.modern;
  if (modern === undefined) return undefined;
  const era = modern.era.current ?? (await modern.era.era(signal));
  return era === 'modern' ? modern : undefined;
}

/** What a member is asked with: who asks, with which capabilities, headers and signal. */
export interface MemberAsk {
  principal: string;
  caps: JsonObject;
  clientInfo: JsonObject | undefined;
  /** The client's headers; the member's forward policy picks those it may get. */
  headers: Readonly<Record<string, string | undefined>>;
  signal: AbortSignal;
}

const CAUSEWAY = { name: 'causeway', version: VERSION };

/** The 2026 envelope of a request asked on the client's behalf: its capabilities and clientInfo. */
function envelope(a: MemberAsk): JsonObject {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
    'io.modelcontextprotocol/clientCapabilities': a.caps,
    'io.modelcontextprotocol/clientInfo': a.clientInfo ?? CAUSEWAY,
  };
}

/**
 * One request to a modern member. -32601 (it serves no such method: a list it does not have) is
 * undefined; any other error answer is the member's refusal, reported as such.
 */
async function ask(
  deps: ModernDeps,
  modern: ModernSide,
  method: string,
  params: JsonObject,
  a: MemberAsk,
): Promise<JsonObject | undefined> {
  const msg: JsonRpcRequest = {
    jsonrpc: '2.0',
    id: `causeway-${method}`,
    method,
    params: { ...params, _meta: envelope(a) },
  };
  const headers = deps.forward.pick(a.headers as Record<string, string>);
  const { response } = await modern.client.request(msg, undefined, {
    headers,
    principal: a.principal,
    signal: a.signal,
  });
  if ('error' in response) {
    if (response.error.code === -32601) return undefined;
    throw causewayError(
      'upstream_unavailable',
      `Upstream ${deps.upstreamName} refused ${method}: ${response.error.message}`,
    );
  }
  deps.metrics.learn(method, response.result);
  return response.result;
}

/** The member's server/discover result: its capabilities and instructions, for the merged one. */
export async function modernDiscover(deps: ModernDeps, modern: ModernSide, a: MemberAsk): Promise<JsonObject> {
  const result = await ask(deps, modern, 'server/discover', {}, a);
  if (result === undefined)
    throw causewayError('upstream_unavailable', `Upstream ${deps.upstreamName} has no server/discover`);
  return result;
}

/**
 * Every page of a member's list (at most `maxPages`): its items with a string `key`, and the
 * first page's result, whose ttlMs and cacheScope say how long the whole list may be kept;
 * undefined when the member has no such list.
 */
export async function modernWalk(
  deps: ModernDeps,
  modern: ModernSide,
  list: { method: string; kind: string; key: string; maxPages: number },
  a: MemberAsk,
): Promise<{ items: JsonObject[]; first: JsonObject } | undefined> {
  const items: JsonObject[] = [];
  let first: JsonObject | undefined;
  let cursor: string | undefined;
  for (let page = 0; page < list.maxPages; page++) {
    const result = await ask(deps, modern, list.method, cursor === undefined ? {} : { cursor }, a);
    if (result === undefined) return undefined;
    first ??= result;
    const found = result[list.kind];
    if (Array.isArray(found))
      for (const item of found) if (isObject(item) && typeof item[list.key] === 'string') items.push(item);
    cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  return { items, first: first! };
}

/**
 * Whether a 2026 member holds the task `taskId` for this client: its own tasks/get answers it.
 * An unknown task (-32602) or no tasks at all (-32601) is not its own.
 */
export async function holdsTask(deps: ModernDeps, modern: ModernSide, taskId: string, a: MemberAsk): Promise<boolean> {
  try {
    return (await ask(deps, modern, 'tasks/get', { taskId }, a)) !== undefined;
  } catch {
    return false;
  }
}

const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';

/**
 * A 2026 member's own subscriptions/listen, for a federated mount's listen (Subscriptions's
 * `remote` part): opened with the client's envelope, acknowledged within the member's request
 * timeout, its notifications handed on as they come, lost when the member ends it.
 */
export function modernListen(deps: ModernDeps, modern: ModernSide, a: MemberAsk): RemoteListen {
  return {
    open: (filter, deliver, lost) =>
      new Promise((resolve, reject) => {
        const closing = new AbortController();
        const timer = setTimeout(
          () =>
            closing.abort(
              causewayError('upstream_timeout', `Upstream ${deps.upstreamName} did not acknowledge listen`),
            ),
          deps.bridge.upstreamTimeoutMs,
        );
        let acknowledged = false;
        const close = () => closing.abort(new Error('listen closed'));
        const onNotification = (n: JsonRpcNotification) => {
          if (acknowledged) return deliver(n);
          if (n.method !== ACKNOWLEDGED) return;
          acknowledged = true;
          clearTimeout(timer);
          const p = isObject(n.params) && isObject(n.params.notifications) ? n.params.notifications : {};
          resolve({ honoured: p as ListenFilter, close });
        };
        const msg: JsonRpcRequest = {
          jsonrpc: '2.0',
          id: 'causeway-listen',
          method: 'subscriptions/listen',
          params: { notifications: filter as JsonObject, _meta: envelope(a) },
        };
        const headers = deps.forward.pick(a.headers as Record<string, string>);
        const signal = AbortSignal.any([a.signal, closing.signal]);
        const opts = { headers, principal: a.principal, signal, longLived: true, onNotification };
        modern.client.request(msg, undefined, opts).then(
          ({ response }) => ended('error' in response ? new Error(response.error.message) : undefined),
          (err: unknown) => ended(err),
        );
        function ended(err: unknown): void {
          clearTimeout(timer);
          if (acknowledged) {
            if (!closing.signal.aborted) lost();
          } else
            reject(
              closing.signal.reason ?? err ?? causewayError('upstream_bad_response', 'listen ended unacknowledged'),
            );
        }
      }),
  };
}
