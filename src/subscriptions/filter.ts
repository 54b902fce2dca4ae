// The vocabulary of subscriptions/listen [SUBS]: what a listen request asks for, the part of it
// Causeway can honour for one upstream, which change notifications then reach the stream and
// in what shape. Pure: no I/O, never throws.

import { META_SUBSCRIPTION_ID } from '../envelope/index.js';
import { isObject, type JsonObject, type JsonRpcNotification, type RequestId } from '../jsonrpc.js';

export { TASKS_EXTENSION } from '../dialect/index.js';

/** The `notifications` object of a listen request, and of its acknowledgment [S26 SubscriptionFilter]. */
export interface ListenFilter {
  toolsListChanged?: true;
  promptsListChanged?: true;
  resourcesListChanged?: true;
  resourceSubscriptions?: string[];
  /** Tasks whose notifications/tasks the stream carries (tasks extension) [SEP-2663]. */
  taskIds?: string[];
}

export const TASK_STATUS = 'notifications/tasks';

export type ReadFilter =
  | { ok: true; filter: ListenFilter /** taskIds were asked for (tasks extension). */; taskIds: boolean }
  | { ok: false; message: string };

type ListKind = 'toolsListChanged' | 'promptsListChanged' | 'resourcesListChanged';

/** Change notification -> the filter field that opts in to it. */
const LIST_CHANGES: Readonly<Record<string, ListKind>> = {
  'notifications/tools/list_changed': 'toolsListChanged',
  'notifications/prompts/list_changed': 'promptsListChanged',
  'notifications/resources/list_changed': 'resourcesListChanged',
};
export const RESOURCE_UPDATED = 'notifications/resources/updated';

/** Legacy capability that backs each list kind: `<capability>.listChanged`. */
const LIST_CAPABILITY: Readonly<Record<ListKind, 'tools' | 'prompts' | 'resources'>> = {
  toolsListChanged: 'tools',
  promptsListChanged: 'prompts',
  resourcesListChanged: 'resources',
};

/** The notifications a listen stream can carry; every other upstream notification is dropped. */
export function isChange(method: string): boolean {
  return method === RESOURCE_UPDATED || Object.hasOwn(LIST_CHANGES, method);
}

/** params.notifications, checked against the schema; duplicate URIs are folded. */
export function readFilter(params: JsonObject, maxUris: number): ReadFilter {
  const n = params.notifications;
  if (!isObject(n)) return { ok: false, message: 'subscriptions/listen needs a notifications object' };
  const filter: ListenFilter = {};
  for (const kind of Object.values(LIST_CHANGES)) {
    const v = n[kind];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') return { ok: false, message: `notifications.${kind} must be a boolean` };
    if (v) filter[kind] = true;
  }
  const uris = n.resourceSubscriptions;
  if (uris !== undefined) {
    if (!Array.isArray(uris) || !uris.every((u) => typeof u === 'string' && u !== '')) {
      return { ok: false, message: 'notifications.resourceSubscriptions must be a list of URIs' };
    }
    const unique = [...new Set(uris as string[])];
    if (unique.length > maxUris) {
      return { ok: false, message: `notifications.resourceSubscriptions lists more than ${maxUris} URIs` };
    }
    filter.resourceSubscriptions = unique;
  }
  const taskIds = n.taskIds;
  if (taskIds !== undefined) {
    if (!Array.isArray(taskIds) || !taskIds.every((id) => typeof id === 'string' && id !== '')) {
      return { ok: false, message: 'notifications.taskIds must be a list of task ids' };
    }
    const unique = [...new Set(taskIds as string[])];
    if (unique.length > maxUris)
      return { ok: false, message: `notifications.taskIds lists more than ${maxUris} tasks` };
    if (unique.length > 0) filter.taskIds = unique;
  }
  return { ok: true, filter, taskIds: filter.taskIds !== undefined };
}

function declared(capability: unknown, flag: string): boolean {
  return isObject(capability) && capability[flag] === true;
}

/**
 * The part of `requested` this upstream can back, from its legacy InitializeResult capabilities:
 * a list kind only if it declared `<kind>.listChanged`, resource subscriptions only if it
 * declared `resources.subscribe`. Task ids are not the upstream's business: src/tasks publishes
 * those notifications, and the listen stream hears them itself.
 */
export function honour(requested: ListenFilter, upstreamCapabilities: unknown): ListenFilter {
  const caps = isObject(upstreamCapabilities) ? upstreamCapabilities : {};
  const out: ListenFilter = {};
  for (const [kind, capability] of Object.entries(LIST_CAPABILITY) as Array<[ListKind, string]>) {
    if (requested[kind] && declared(caps[capability], 'listChanged')) out[kind] = true;
  }
  if (requested.resourceSubscriptions !== undefined && declared(caps.resources, 'subscribe')) {
    out.resourceSubscriptions = [...requested.resourceSubscriptions];
  }
  return out;
}

/** What several honoured filters ask for together (a listen over the members of a federated mount). */
export function unionOf(filters: readonly ListenFilter[]): ListenFilter {
  const out: ListenFilter = {};
  for (const f of filters) {
    for (const kind of Object.keys(LIST_CAPABILITY) as ListKind[]) if (f[kind]) out[kind] = true;
    if (f.resourceSubscriptions !== undefined)
      out.resourceSubscriptions = [...(out.resourceSubscriptions ?? []), ...f.resourceSubscriptions];
  }
  return out;
}

/** Whether the filter asks anything of the upstream session. */
export function isEmpty(filter: ListenFilter): boolean {
  return (
    !filter.toolsListChanged &&
    !filter.promptsListChanged &&
    !filter.resourcesListChanged &&
    !filter.resourceSubscriptions?.length
  );
}

/** `uri` is the subscribed resource or one of its sub-resources [S26 ResourceUpdatedNotification]. */
export function covers(subscribed: string, uri: string): boolean {
  if (uri === subscribed) return true;
  if (!uri.startsWith(subscribed)) return false;
  return subscribed.endsWith('/') || '/?#'.includes(uri.charAt(subscribed.length));
}

/** Whether a change notification belongs on a stream with this (honoured) filter. */
export function admits(filter: ListenFilter, n: JsonRpcNotification): boolean {
  if (n.method === RESOURCE_UPDATED) {
    const uri = isObject(n.params) ? n.params.uri : undefined;
    return typeof uri === 'string' && (filter.resourceSubscriptions ?? []).some((s) => covers(s, uri));
  }
  const kind = Object.hasOwn(LIST_CHANGES, n.method) ? LIST_CHANGES[n.method] : undefined;
  return kind !== undefined && filter[kind] === true;
}

/** The 2026 shape on a listen stream: only the spec's params, tagged with the subscription id [SUBS]. */
export function forStream(n: JsonRpcNotification, subscriptionId: RequestId): JsonRpcNotification {
  const params: JsonObject = { _meta: { [META_SUBSCRIPTION_ID]: subscriptionId } };
  // A task notification's params are the DetailedTask [SEP-2663].
  if (n.method === TASK_STATUS && isObject(n.params))
    return { jsonrpc: '2.0', method: n.method, params: { ...n.params, ...params } };
  if (n.method === RESOURCE_UPDATED && isObject(n.params) && typeof n.params.uri === 'string')
    params.uri = n.params.uri;
  return { jsonrpc: '2.0', method: n.method, params };
}

export function acknowledgment(filter: ListenFilter, subscriptionId: RequestId): JsonRpcNotification {
  return {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { _meta: { [META_SUBSCRIPTION_ID]: subscriptionId }, notifications: filter as JsonObject },
  };
}

/** The graceful end of a listen stream [SUBS "Ending"]. */
export function closingResult(subscriptionId: RequestId): JsonObject {
  return {
    jsonrpc: '2.0',
    id: subscriptionId,
    result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: subscriptionId } },
  };
}

/** Synthetic changes sent after a gap in the upstream stream: everything a filter may have missed. */
export function gapNotifications(subscribedUris: Iterable<string>): JsonRpcNotification[] {
  const out: JsonRpcNotification[] = Object.keys(LIST_CHANGES).map((method) => ({ jsonrpc: '2.0', method }));
  for (const uri of subscribedUris) out.push({ jsonrpc: '2.0', method: RESOURCE_UPDATED, params: { uri } });
  return out;
}
