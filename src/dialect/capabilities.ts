// Capability translation across the eras. Upstream, Causeway declares exactly what the modern
// client declared, in legacy shape. Downstream, it advertises only what it can translate.

import { createHash } from 'node:crypto';
import { capabilitiesText } from '../envelope/index.js';
import { isObject, type JsonObject } from '../jsonrpc.js';
import { TASKS_EXTENSION, upstreamRunsTasks } from './tasks.js';
import { BoundedMap } from '../bounded.js';

/** 2026 ClientCapabilities -> 2025-11-25 ClientCapabilities (no extensions; roots without listChanged). */
export function toLegacyClientCapabilities(modern: JsonObject): JsonObject {
  const out: JsonObject = {};
  if (isObject(modern.experimental)) out.experimental = modern.experimental;
  // roots/list_changed is gone in 2026: roots arrive per request, so never promise the notification.
  if (isObject(modern.roots)) out.roots = {};
  if (isObject(modern.sampling)) out.sampling = modern.sampling;
  if (isObject(modern.elicitation)) out.elicitation = modern.elicitation;
  return out;
}

/** Canonical JSON: same capabilities, same text, whatever the key order. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * Legacy ServerCapabilities -> what the modern face advertises. Kept: tools, prompts, resources,
 * completions, logging (per-request logLevel is translated), and listChanged / subscribe where
 * the upstream declared them (bridged by subscriptions/listen). Legacy tasks become the tasks
 * extension when the upstream runs tools/call as tasks (bridged by src/tasks) [SEP-2663].
 */
export function toModernServerCapabilities(legacy: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key of ['tools', 'prompts', 'resources'] as const) {
    const cap = legacy[key];
    if (!isObject(cap)) continue;
    const modern: JsonObject = {};
    if (cap.listChanged === true) modern.listChanged = true;
    if (key === 'resources' && cap.subscribe === true) modern.subscribe = true;
    out[key] = modern;
  }
  if (isObject(legacy.completions)) out.completions = {};
  if (isObject(legacy.logging)) out.logging = {};
  if (upstreamRunsTasks(legacy)) out.extensions = { [TASKS_EXTENSION]: {} };
  return out;
}

/** The client capability a legacy server->client request needs, in 2026 shape [MRTR "capabilities"]. */
export function requiredCapability(method: string, params: JsonObject | undefined): JsonObject | undefined {
  switch (method) {
    case 'sampling/createMessage': {
      const needsTools = params !== undefined && (params.tools !== undefined || params.toolChoice !== undefined);
      return { sampling: needsTools ? { tools: {} } : {} };
    }
    case 'elicitation/create':
      return { elicitation: params?.mode === 'url' ? { url: {} } : { form: {} } };
    case 'roots/list':
      return { roots: {} };
    default:
      return undefined;
  }
}

/** Whether the declared 2026 ClientCapabilities cover `required` (`elicitation: {}` means form only). */
export function declares(declared: JsonObject, required: JsonObject): boolean {
  if (isObject(required.sampling)) {
    if (!isObject(declared.sampling)) return false;
    if (isObject(required.sampling.tools) && !isObject(declared.sampling.tools)) return false;
  }
  if (isObject(required.elicitation)) {
    const e = declared.elicitation;
    if (!isObject(e)) return false;
    const formOnly = Object.keys(e).length === 0;
    if (isObject(required.elicitation.url) && !isObject(e.url)) return false;
    if (isObject(required.elicitation.form) && !(formOnly || isObject(e.form))) return false;
  }
  if (isObject(required.roots) && !isObject(declared.roots)) return false;
  return true;
}

/** The legacy capabilities Causeway declares upstream for a client, and their fingerprint (a pooled session's key). */
export interface Declared {
  legacyCapabilities: JsonObject;
  fingerprint: string;
}

/**
 * Clients send the same few capability objects again and again: their translation and hash are
 * remembered by the request's own JSON text (small ones only, a bounded number).
 */
const MAX_REMEMBERED = 256;
const declared = new BoundedMap<string, Declared>(MAX_REMEMBERED);
const MAX_REMEMBERED_TEXT = 2048;

/**
 * 16 base64url characters of sha256 over the canonical legacy capabilities: requests share a session only when these
 * match.
 */
export function declaredCapabilities(clientCapabilities: JsonObject): Declared {
  const text = capabilitiesText(clientCapabilities);
  const known = declared.get(text);
  if (known) return known;
  const legacyCapabilities = Object.freeze(toLegacyClientCapabilities(clientCapabilities));
  const fingerprint = createHash('sha256').update(canonicalJson(legacyCapabilities)).digest('base64url').slice(0, 16);
  const d = { legacyCapabilities, fingerprint };
  if (text.length <= MAX_REMEMBERED_TEXT) {
    declared.set(text, d);
  }
  return d;
}
