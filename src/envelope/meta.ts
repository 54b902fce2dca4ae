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

export type MetaOutcome =
  | { ok: true; meta: RequestMeta }
  | { ok: false; reason: 'missing_meta' | 'invalid_params'; message: string };

const missing = (message: string): MetaOutcome => ({ ok: false, reason: 'missing_meta', message });
const invalid = (message: string): MetaOutcome => ({ ok: false, reason: 'invalid_params', message });

/** The last capabilities object made into text, and its text: a request asks twice, at once. */
let lastCaps: JsonObject | undefined;
let lastText = '';

/**
 * A request's clientCapabilities as JSON text: the envelope bounds its size and the pool keys
 * sessions by it. Safe to stringify: the front door bounded its depth. Remembered for the one
 * object last asked about (a WeakMap entry per request cost more than the text it saved), and
 * given again for the next request's when it holds the same members (a client sends the same
 * capabilities each time): its length and its sessions are the same, and no text is made.
 */
export function capabilitiesText(caps: JsonObject): string {
  if (caps !== lastCaps) {
    if (lastCaps === undefined || !sameJson(caps, lastCaps)) lastText = JSON.stringify(caps);
    lastCaps = caps;
  }
  return lastText;
}

/** Whether two JSON values hold the same: equal members (in any order) and items, all the way down. */
function sameJson(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  let members = 0;
  for (const k in a) {
    if (!Object.hasOwn(b, k) || !sameJson(a[k], b[k])) return false;
    members++;
  }
  for (const _ in b) members--;
  return members === 0;
}

/**
 * Each distinct clientCapabilities gets its own pooled upstream session, which keeps it: without
 * a bound, big distinct objects would hold memory here and upstream. Real ones are a few hundred bytes.
 */
export const MAX_CAPABILITIES_BYTES = 8192;

/**
 * Where a clientCapabilities value departs from the 2026 ClientCapabilities shape [S26]; undefined
 * when it fits. Members the schema does not name are let through (later revisions add some).
 */
export function capabilitiesProblem(caps: JsonObject): string | undefined {
  if (capabilitiesText(caps).length > MAX_CAPABILITIES_BYTES)
    return `longer than ${MAX_CAPABILITIES_BYTES} characters as JSON`;
  return (
    objectOf('experimental', caps.experimental) ??
    objectOf('roots', caps.roots, []) ??
    objectOf('sampling', caps.sampling, ['context', 'tools']) ??
    objectOf('elicitation', caps.elicitation, ['form', 'url']) ??
    objectOf('extensions', caps.extensions)
  );
}

/** `v` (caps[key]) when an object, and each of its `members` (all when undefined) an object too. */
function objectOf(key: string, v: JsonValue | undefined, members?: readonly string[]): string | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) return `${key} must be an object`;
  for (const k in v) {
    if ((members === undefined || members.includes(k)) && !isObject(v[k])) return `${key}.${k} must be an object`;
  }
  return undefined;
}

export function readMeta(params: JsonObject | undefined): MetaOutcome {
  const meta: JsonValue | undefined = params?._meta;
  if (!isObject(meta)) return missing('Missing required params._meta');
  const version = meta[META_VERSION];
  if (typeof version !== 'string' || version === '') return missing(`Missing required _meta["${META_VERSION}"]`);
  const caps = meta[META_CAPABILITIES];
  if (!isObject(caps)) return missing(`Missing required _meta["${META_CAPABILITIES}"]`);
  const capsProblem = capabilitiesProblem(caps);
  if (capsProblem !== undefined) return invalid(`Invalid _meta["${META_CAPABILITIES}"]: ${capsProblem}`);
  const info = meta[META_CLIENT_INFO];
  if (info !== undefined && !isObject(info)) return missing(`Invalid _meta["${META_CLIENT_INFO}"]`);
  const level = meta[META_LOG_LEVEL];
  if (level !== undefined && !LOG_LEVELS.includes(level as LogLevel)) {
    return missing(`Invalid _meta["${META_LOG_LEVEL}"]: expected one of ${LOG_LEVELS.join(', ')}`);
  }
  const token = meta.progressToken;
  if (token !== undefined && typeof token !== 'string' && typeof token !== 'number') {
    return missing('Invalid _meta.progressToken: expected a string or number');
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
