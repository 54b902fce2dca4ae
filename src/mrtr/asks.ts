// Legacy server->client requests as 2026 inputRequests: their keys, their 2026 shape, and the
// check that a client's answer has the shape its ask needs before it goes upstream.

import { createHash } from 'node:crypto';
import { canonicalJson, RELATED_TASK_META } from '../dialect/index.js';
import { isObject, type JsonObject, type JsonRpcRequest, type JsonValue } from '../jsonrpc.js';

/** The documented convention by which a legacy server names the key of its ask. */
export const INPUT_KEY_META = 'causeway/inputKey';

export const ASK_METHODS = ['elicitation/create', 'sampling/createMessage', 'roots/list'] as const;

export interface Ask {
  key: string;
  upstreamId: string | number;
  /** The 2026 InputRequest: {method, params}. */
  input: JsonObject;
  /** The id of the stream event before this ask's own: resuming after it replays the ask. */
  before?: string;
  /** The legacy request itself, for a task that takes the call over before it is answered. */
  request?: JsonRpcRequest;
}

/** 2026 shape: the key hint, the related-task tag and url-mode elicitationId removed [CHG minor 11][SEP-2663]. */
function modernParams(method: string, params: JsonObject | undefined): JsonObject {
  const out: JsonObject = { ...(params ?? {}) };
  if (isObject(out._meta)) {
    const { [INPUT_KEY_META]: _hint, [RELATED_TASK_META]: _task, ...meta } = out._meta;
    void _hint;
    void _task;
    if (Object.keys(meta).length > 0) out._meta = meta;
    else delete out._meta;
  }
  if (method === 'elicitation/create') delete out.elicitationId;
  return out;
}

/** The key: the server's hint, else derived from the ask's content, so the same question gets the same key. */
export function askKey(r: JsonRpcRequest): string {
  const hint = isObject(r.params) && isObject(r.params._meta) ? r.params._meta[INPUT_KEY_META] : undefined;
  if (typeof hint === 'string' && hint !== '') return hint;
  const digest = createHash('sha256')
    .update(r.method + canonicalJson(modernParams(r.method, r.params)))
    .digest('base64url')
    .slice(0, 12);
  return `${r.method.split('/')[0]}-${digest}`;
}

export function toAsk(r: JsonRpcRequest, taken: ReadonlySet<string>): Ask {
  let key = askKey(r);
  for (let n = 2; taken.has(key); n++) key = `${askKey(r)}-${n}`;
  return { key, upstreamId: r.id, input: { method: r.method, params: modernParams(r.method, r.params) } };
}

const isString = (v: JsonValue | undefined): v is string => typeof v === 'string';

/**
 * Whether `response` is a well-formed answer to an ask of `method` [S26 ElicitResult, CreateMessageResult,
 * ListRootsResult].
 */
export function validAnswer(method: string, response: JsonValue | undefined): response is JsonObject {
  if (!isObject(response)) return false;
  switch (method) {
    case 'elicitation/create':
      return (
        (response.action === 'accept' || response.action === 'decline' || response.action === 'cancel') &&
        (response.content === undefined || isObject(response.content))
      );
    case 'sampling/createMessage':
      return isString(response.role) && isObject(response.content) && isString(response.model);
    case 'roots/list':
      return Array.isArray(response.roots) && response.roots.every((r) => isObject(r) && isString(r.uri));
    default:
      return false;
  }
}
