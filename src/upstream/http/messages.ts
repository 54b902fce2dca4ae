// Decodes what a legacy upstream sends (one JSON-RPC message, or a 2025-03-26 batch array) into
// checked messages. Text that is not JSON, or a value that is not a well-formed JSON-RPC message,
// is upstream_bad_response; nothing here routes or answers.

import { CausewayError } from '../../errors.js';
import {
  isNotification,
  isObject,
  isRequest,
  isResponse,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../../jsonrpc.js';

export type UpstreamMessage =
  | { kind: 'response'; message: JsonRpcResponse }
  | { kind: 'request'; message: JsonRpcRequest }
  | { kind: 'notification'; message: JsonRpcNotification };

export function badResponse(detail: string, cause?: unknown): CausewayError {
  return new CausewayError(
    'upstream_bad_response',
    `Upstream sent an invalid response: ${detail}`,
    undefined,
    cause === undefined ? undefined : { cause },
  );
}

function wellFormedResponse(m: JsonRpcResponse): boolean {
  if ('error' in m) {
    const e: unknown = m.error;
    return isObject(e) && typeof e.code === 'number' && Number.isInteger(e.code) && typeof e.message === 'string';
  }
  return isObject(m.result);
}

export function classify(value: unknown): UpstreamMessage {
  if (isResponse(value)) {
    if (!wellFormedResponse(value)) throw badResponse('malformed JSON-RPC response');
    return { kind: 'response', message: value };
  }
  if (isRequest(value)) return { kind: 'request', message: value };
  if (isNotification(value)) return { kind: 'notification', message: value };
  throw badResponse('not a JSON-RPC message');
}

export function decodeMessages(text: string): UpstreamMessage[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw badResponse('body is not JSON', err);
  }
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) throw badResponse('empty batch');
    return parsed.map(classify);
  }
  return [classify(parsed)];
}
