// Classifies one inbound POST at the door: legacy (proxied unchanged), modern (a validated
// 2026-07-28 request), or a rejection carrying the spec's error. Pure: it never throws and
// never touches a transport.

import type { ErrorReason } from '../errors.js';
import { isObject, isRequestId, type JsonObject, type JsonValue, type RequestId } from '../jsonrpc.js';
import { checkMethodHeader, checkNameHeader, checkVersionHeader, type HeaderBag, type HeaderCheck } from './headers.js';
import { readMeta, META_VERSION, type RequestMeta } from './meta.js';
import { methodSpec, type MethodSpec } from './methods.js';
import { MODERN_VERSIONS, isLegacyVersion, isModernVersion } from './versions.js';

export interface ModernRequest {
  id: RequestId;
  method: string;
  params: JsonObject;
  meta: RequestMeta;
  spec: MethodSpec;
  /** params.name or params.uri for the methods that mirror it in Mcp-Name. */
  name: string | undefined;
}

export interface Rejection {
  reason: ErrorReason;
  message?: string;
  data?: JsonValue;
  /** The request id to echo; null when it could not be read. */
  id: RequestId | null;
}

export type Classified =
  | { era: 'legacy' }
  /** A notification that needs no action: answered 202 with no body. */
  | { era: 'accepted' }
  | { era: 'modern'; request: ModernRequest }
  | { era: 'reject'; rejection: Rejection };

export interface InboundPost {
  headers: HeaderBag;
  /** Parsed body; `parseError` set when it was not JSON. */
  body: unknown;
  parseError: boolean;
}

function reject(reason: ErrorReason, id: RequestId | null, message?: string, data?: JsonValue): Classified {
  return { era: 'reject', rejection: { reason, id, message, data } };
}

function headerReject(check: HeaderCheck, id: RequestId): Classified | undefined {
  return check.ok ? undefined : reject('header_mismatch', id, check.message);
}

function hasModernMeta(body: JsonObject): boolean {
  const params = body.params;
  return isObject(params) && isObject(params._meta) && params._meta[META_VERSION] !== undefined;
}

/**
 * Legacy traffic: a request without modern `_meta` that is inside a legacy session, an
 * initialize, or whose MCP-Protocol-Version is a legacy revision or absent (absent means
 * 2025-03-26 [SHTTP]).
 */
function isLegacy(headers: HeaderBag, body: unknown): boolean {
  // A modern envelope wins over a stray Mcp-Session-Id (ignored in 2026) and even on
  // `initialize` (then a removed method, 404) [SHTTP].
  if (isObject(body) && hasModernMeta(body)) return false;
  if (headers['mcp-session-id'] !== undefined) return true;
  if (!isObject(body)) return false;
  if (body.method === 'initialize') return true;
  const version = headers['mcp-protocol-version']?.trim();
  return version === undefined || isLegacyVersion(version);
}

export function classifyPost(input: InboundPost): Classified {
  const { headers, body } = input;
  if (input.parseError) {
    return headers['mcp-session-id'] !== undefined ? { era: 'legacy' } : reject('parse_error', null);
  }
  if (isLegacy(headers, body)) return { era: 'legacy' };
  if (Array.isArray(body)) return reject('batch_not_supported', null);
  if (!isObject(body)) return reject('invalid_request', null, 'Request must be a JSON-RPC object');

  const rawId = body.id;
  const id = isRequestId(rawId) ? rawId : null;
  if (body.jsonrpc !== '2.0') return reject('invalid_request', id, 'jsonrpc must be "2.0"');
  if (typeof body.method !== 'string') {
    return reject(
      'invalid_request',
      id,
      body.result !== undefined || body.error !== undefined
        ? 'Clients do not send JSON-RPC responses in 2026-07-28'
        : 'method must be a string',
    );
  }
  if (rawId === undefined) {
    // Clients still post it when closing a stream; closing the stream already cancelled the request [SHTTP].
    if (body.method === 'notifications/cancelled') return { era: 'accepted' };
    return reject('notification_not_accepted', null, `Notification ${body.method} is not accepted`);
  }
  if (id === null) return reject('invalid_request', null, 'id must be a string or an integer');
  const method = body.method;
  if (body.params !== undefined && !isObject(body.params))
    return reject('invalid_params', id, 'params must be an object');
  const params: JsonObject = isObject(body.params) ? body.params : {};

  const metaOutcome = readMeta(params);
  if (!metaOutcome.ok) return reject(metaOutcome.reason, id, metaOutcome.message);
  const meta = metaOutcome.meta;

  const mismatch = headerReject(checkVersionHeader(headers, meta.protocolVersion), id);
  if (mismatch) return mismatch;
  if (!isModernVersion(meta.protocolVersion)) {
    return reject('unsupported_protocol_version', id, undefined, {
      supported: [...MODERN_VERSIONS],
      requested: meta.protocolVersion,
    });
  }
  const methodMismatch = headerReject(checkMethodHeader(headers, method), id);
  if (methodMismatch) return methodMismatch;

  const spec = methodSpec(method);
  if (!spec) return reject('method_not_found', id, `Method not found: ${method}`);

  let name: string | undefined;
  if (spec.nameParam) {
    const v = params[spec.nameParam];
    if (typeof v !== 'string') return reject('invalid_params', id, `params.${spec.nameParam} must be a string`);
    name = v;
  }
  const nameMismatch = headerReject(checkNameHeader(headers, name), id);
  if (nameMismatch) return nameMismatch;

  return { era: 'modern', request: { id, method, params, meta, spec, name } };
}
