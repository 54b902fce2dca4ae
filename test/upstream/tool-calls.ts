// Requests (tools/call above all) and their text, for tests that drive an upstream client directly.

import type { JsonObject, JsonRpcRequest, JsonRpcResponse } from '../../src/jsonrpc.js';

let nextId = 1;

/** A request with a fresh id. */
export const request = (method: string, params: JsonObject = {}): JsonRpcRequest => ({
  jsonrpc: '2.0',
  id: nextId++,
  method,
  params,
});

/** A tools/call with a fresh id, and a progressToken when `token` is given. */
export const call = (name: string, args: JsonObject = {}, token?: string): JsonRpcRequest =>
  request('tools/call', { name, arguments: args, ...(token === undefined ? {} : { _meta: { progressToken: token } }) });

/** The first text content of a result, or `error <message>`. */
export const textOf = (r: JsonRpcResponse): string =>
  'result' in r ? ((r.result.content as Array<{ text?: string }>)[0]?.text ?? '') : `error ${r.error.message}`;
