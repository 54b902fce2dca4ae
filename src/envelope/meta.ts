// The per-request `_meta` envelope of 2026-07-28 [BASE]: protocolVersion and clientCapabilities
// are required (-32602 / 400 when missing); logLevel and progressToken are checked when present.

import { isObject, type JsonObject, type JsonValue } from '../jsonrpc.js';

export const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface RequestMeta {
  protocolVersion: string;
  clientCapabilities: JsonObject;
  clientInfo: JsonObject | undefined;
  logLevel: LogLevel | undefined;
  progressToken: string | number | undefined;
}

export type MetaOutcome = { ok: true; meta: RequestMeta } | { ok: false; message: string };

export function readMeta(params: JsonObject | undefined): MetaOutcome {
  const meta: JsonValue | undefined = params?._meta;
  if (!isObject(meta)) return { ok: false, message: 'Missing required params._meta' };
  const version = meta[META_VERSION];
  if (typeof version !== 'string' || version === '') {
    return { ok: false, message: `Missing required _meta["${META_VERSION}"]` };
  }
  const caps = meta[META_CAPABILITIES];
  if (!isObject(caps)) return { ok: false, message: `Missing required _meta["${META_CAPABILITIES}"]` };
  const info = meta[META_CLIENT_INFO];
  if (info !== undefined && !isObject(info)) return { ok: false, message: `Invalid _meta["${META_CLIENT_INFO}"]` };
  const level = meta[META_LOG_LEVEL];
  if (level !== undefined && !LOG_LEVELS.includes(level as LogLevel)) {
    return { ok: false, message: `Invalid _meta["${META_LOG_LEVEL}"]: expected one of ${LOG_LEVELS.join(', ')}` };
  }
  const token = meta.progressToken;
  if (token !== undefined && typeof token !== 'string' && typeof token !== 'number') {
    return { ok: false, message: 'Invalid _meta.progressToken: expected a string or number' };
  }
  return {
    ok: true,
    meta: {
      protocolVersion: version,
      clientCapabilities: caps,
      clientInfo: info,
      logLevel: level as LogLevel | undefined,
      progressToken: token,
    },
  };
}

export function levelAtLeast(level: string, min: LogLevel): boolean {
  const i = LOG_LEVELS.indexOf(level as LogLevel);
  return i >= LOG_LEVELS.indexOf(min);
}
