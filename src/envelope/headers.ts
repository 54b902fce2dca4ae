// Mirrored-header checks for the modern face [SHTTP "Standard headers"]: MCP-Protocol-Version,
// Mcp-Method, Mcp-Name and the Mcp-Param-* headers of x-mcp-header tool arguments. Values are
// decoded (=?base64?...?=) before comparing; any disagreement is -32020 / 400.

import type { JsonObject, JsonValue } from '../jsonrpc.js';

export type HeaderBag = Readonly<Record<string, string | undefined>>;

export type HeaderCheck = { ok: true } | { ok: false; message: string };

const OK: HeaderCheck = { ok: true };

const SENTINEL_OPEN = '=?base64?';
const SENTINEL = /^=\?base64\?(.*)\?=$/s;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes one header value; undefined when it is malformed (bad base64, bad UTF-8, control chars). */
export function decodeHeaderValue(raw: string): string | undefined {
  const value = raw.trim();
  if (value.startsWith(SENTINEL_OPEN)) {
    const m = SENTINEL.exec(value);
    if (m) {
      const b64 = m[1]!;
      if (!BASE64.test(b64)) return undefined;
      try {
        return utf8.decode(Buffer.from(b64, 'base64'));
      } catch {
        return undefined;
      }
    }
  }
  return isVisibleAscii(value) ? value : undefined;
}

/**
 * Visible ASCII with inner spaces (0x20..0x7E), or empty. Trimmed already, so neither end is a
 * space. A loop, not a regular expression: three of these per request, most a few characters.
 */
function isVisibleAscii(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

function mismatch(header: string, got: string, want: string): HeaderCheck {
  return { ok: false, message: `Header mismatch: ${header} header value '${got}' does not match body value '${want}'` };
}

/**
 * One mirrored header (`name`: as node:http keys it, lower case): required when the body has a value, must equal it
 * after decoding.
 */
function checkMirrored(headers: HeaderBag, header: string, name: string, bodyValue: string | undefined): HeaderCheck {
  const raw = headers[name];
  if (raw === undefined) {
    return bodyValue === undefined ? OK : { ok: false, message: `Missing required header ${header}` };
  }
  const decoded = decodeHeaderValue(raw);
  if (decoded === undefined) return { ok: false, message: `Invalid characters in header ${header}` };
  if (bodyValue === undefined) return OK;
  return decoded === bodyValue ? OK : mismatch(header, decoded, bodyValue);
}

export function checkVersionHeader(headers: HeaderBag, metaVersion: string): HeaderCheck {
  return checkMirrored(headers, 'MCP-Protocol-Version', 'mcp-protocol-version', metaVersion);
}

export function checkMethodHeader(headers: HeaderBag, method: string): HeaderCheck {
  return checkMirrored(headers, 'Mcp-Method', 'mcp-method', method);
}

export function checkNameHeader(headers: HeaderBag, name: string | undefined): HeaderCheck {
  return checkMirrored(headers, 'Mcp-Name', 'mcp-name', name);
}

/** The x-mcp-header annotations reachable from a tool's inputSchema through `properties` only. */
export interface ParamHeader {
  header: string;
  path: string[];
  type: 'string' | 'integer' | 'boolean';
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Returns the annotations, or undefined when the schema's annotations are invalid [SHTTP]. */
export function paramHeaders(inputSchema: JsonValue | undefined): ParamHeader[] | undefined {
  const read = readParamHeaders(inputSchema);
  return 'problem' in read ? undefined : read.headers;
}

/**
 * The annotations, or why they cannot become Mcp-Param-* headers (the first fault met): what
 * `causeway doctor` tells an operator about a tool Causeway leaves out of a list.
 */
export function readParamHeaders(inputSchema: JsonValue | undefined): { headers: ParamHeader[] } | { problem: string } {
  const out: ParamHeader[] = [];
  const seen = new Set<string>();
  let problem: string | undefined;
  const walk = (schema: JsonValue | undefined, path: string[]): void => {
    if (problem !== undefined || typeof schema !== 'object' || schema === null || Array.isArray(schema)) return;
    const annotation = schema['x-mcp-header'];
    if (annotation !== undefined && path.length > 0) {
      const type = schema.type;
      const at = path.join('.');
      if (typeof annotation !== 'string' || !TOKEN.test(annotation)) {
        problem = `${at}: x-mcp-header is not a header name token`;
      } else if (seen.has(annotation.toLowerCase())) problem = `${at}: x-mcp-header ${annotation} is used twice`;
      else if (type !== 'string' && type !== 'integer' && type !== 'boolean') {
        const what = JSON.stringify(type ?? 'untyped');
        problem = `${at}: x-mcp-header on a ${what} property (string, integer or boolean only)`;
      }
      if (problem !== undefined) return;
      seen.add((annotation as string).toLowerCase());
      out.push({ header: annotation as string, path, type: type as ParamHeader['type'] });
    }
    const props = schema.properties;
    if (typeof props === 'object' && props !== null && !Array.isArray(props)) {
      for (const [k, v] of Object.entries(props)) walk(v, [...path, k]);
    }
  };
  walk(inputSchema, []);
  return problem === undefined ? { headers: out } : { problem };
}

function valueAt(args: JsonObject | undefined, path: string[]): JsonValue | undefined {
  let cur: JsonValue | undefined = args;
  for (const p of path) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur)) return undefined;
    cur = cur[p];
  }
  return cur;
}

/**
 * Whether a tool's annotations could refuse this call, so they must be known first: it carries an
 * Mcp-Param-* header to compare, or an argument with a value (a null or absent one needs no header).
 */
export function mayNeedParamHeaders(headers: HeaderBag, args: JsonObject | undefined): boolean {
  for (const k in headers) if (k.startsWith('mcp-param-')) return true;
  if (args === undefined) return false;
  for (const k in args) if (args[k] !== null && args[k] !== undefined) return true;
  return false;
}

export function checkParamHeaders(
  headers: HeaderBag,
  params: ParamHeader[],
  args: JsonObject | undefined,
): HeaderCheck {
  for (const p of params) {
    const name = `Mcp-Param-${p.header}`;
    const raw = headers[name.toLowerCase()];
    const value = valueAt(args, p.path);
    if (value === undefined || value === null) continue;
    if (raw === undefined) return { ok: false, message: `Missing required header ${name}` };
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined) return { ok: false, message: `Invalid characters in header ${name}` };
    const same =
      p.type === 'integer' && typeof value === 'number'
        ? decoded.trim() !== '' && Number(decoded) === value
        : p.type === 'boolean'
          ? decoded === String(value)
          : decoded === value;
    if (!same) return mismatch(name, decoded, String(value));
  }
  return OK;
}

/**
 * The Mcp-Param-* headers a call's arguments give under a tool's annotations: none for a null or absent value [SHTTP].
 */
export function mirroredParamHeaders(
  params: readonly ParamHeader[],
  args: JsonObject | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of params) {
    const value = valueAt(args, p.path);
    if (value === undefined || value === null || typeof value === 'object') continue;
    out[`mcp-param-${p.header.toLowerCase()}`] = encodeHeaderValue(String(value));
  }
  return out;
}

/** Plain visible ASCII as is; anything else, or a value that looks like the sentinel, as =?base64?...?= [SHTTP]. */
export function encodeHeaderValue(v: string): string {
  // As is when decoding gives it back: not empty, no space to trim at either end, visible ASCII, not the sentinel's
  // shape.
  const asIs = v !== '' && v.trim() === v && isVisibleAscii(v) && !(v.startsWith('=?') && SENTINEL.test(v));
  return asIs ? v : `=?base64?${Buffer.from(v, 'utf8').toString('base64')}?=`;
}
