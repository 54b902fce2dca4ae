// Legacy JSON-RPC errors -> 2026-07-28 errors [BASE "Error codes"]. -32002 becomes -32602 with
// data.uri; nothing in the MCP-reserved range -32020..-32099 leaks unless 2026 defines it; -32042
// (URL elicitation required) never leaks.

import { pinnedStatus } from '../errors.js';
import { isObject, type JsonObject, type JsonRpcErrorObject } from '../jsonrpc.js';

const MCP_RESERVED_LOW = -32099;
const MCP_RESERVED_HIGH = -32020;
const DEFINED_2026 = new Set([-32020, -32021, -32022]);

export function translateError(method: string, err: JsonRpcErrorObject, params: JsonObject): JsonRpcErrorObject {
  const code = typeof err.code === 'number' ? err.code : -32603;
  const message = typeof err.message === 'string' ? err.message : 'Upstream error';
  // Resource not found: -32602 with data.uri in 2026 [RES]; older SDKs say -32002, or -32602 without data.
  if (code === -32002 || (code === -32602 && method === 'resources/read')) {
    const data = isObject(err.data) ? err.data : {};
    const uri = typeof data.uri === 'string' ? data.uri : typeof params.uri === 'string' ? params.uri : undefined;
    const own = uri === undefined ? 'Resource not found' : `Resource not found: ${uri}`;
    return { code: -32602, message: own, data: uri === undefined ? data : { ...data, uri } };
  }
  if (code >= MCP_RESERVED_LOW && code <= MCP_RESERVED_HIGH && !DEFINED_2026.has(code)) {
    return { code: -32603, message: `Upstream error: ${withoutCodePrefix(message)}` };
  }
  return err.data === undefined ? { code, message } : { code, message, data: err.data };
}

/** A recoded error's text must not name the old code: SDK 1.x writes "MCP error <code>: " before its own. */
function withoutCodePrefix(message: string): string {
  return message.replace(/^MCP error -?\d+: /, '');
}

/** HTTP status for a relayed upstream error: those 2026 pins to a status keep it; others ride on 200. */
export function statusForUpstreamError(code: number): number {
  return pinnedStatus(code) ?? 200;
}
