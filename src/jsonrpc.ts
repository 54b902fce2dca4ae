// JSON-RPC 2.0 message shapes shared by every stage. Values stay plain JSON; stages narrow them.

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue | undefined;
}

export type RequestId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: JsonObject;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: JsonObject;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: JsonValue;
}

export interface JsonRpcResultResponse {
  jsonrpc: '2.0';
  id: RequestId;
  result: JsonObject;
}

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id?: RequestId | null;
  error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcResultResponse | JsonRpcErrorResponse;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A shallow copy of a JSON object, member by member (V8's spread with members after it takes a
 * slow path), without the members `leaveOut` names. A `__proto__` member, which JSON.parse makes
 * an own member, stays one.
 */
export function copyObject(from: JsonObject, leaveOut?: (key: string) => boolean): JsonObject {
  const out: JsonObject = {};
  for (const k in from) {
    if (leaveOut?.(k)) continue;
    if (k === '__proto__')
      Object.defineProperty(out, k, { value: from[k], enumerable: true, writable: true, configurable: true });
    else out[k] = from[k]!;
  }
  return out;
}

export function isRequestId(v: unknown): v is RequestId {
  return typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));
}

export function isRequest(m: unknown): m is JsonRpcRequest {
  return isObject(m) && typeof m.method === 'string' && isRequestId(m.id);
}

export function isNotification(m: unknown): m is JsonRpcNotification {
  return isObject(m) && typeof m.method === 'string' && m.id === undefined;
}

export function isResponse(m: unknown): m is JsonRpcResponse {
  return isObject(m) && m.method === undefined && ('result' in m || 'error' in m);
}

export function isErrorResponse(m: JsonRpcResponse): m is JsonRpcErrorResponse {
  return 'error' in m;
}
