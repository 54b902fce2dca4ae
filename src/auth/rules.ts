// auth.rules: the scopes a request needs. A key is a method (or `*`, any method), optionally
// followed by a space and a name pattern (`*` matches any run of characters) matched against
// the tool or prompt name, or the resource URI. Every rule that matches applies, so a request
// needs the union of their scopes; a rule with a pattern matches only requests carrying a name.

import { globToRegExp } from '../glob.js';
import { isObject, type JsonObject } from '../jsonrpc.js';

export interface ScopeRule {
  method: string | undefined;
  name: RegExp | undefined;
  scopes: readonly string[];
}

/**
 * The list results filtered to what may be called, and the call that decides each item. A
 * template is kept when a resources/read of its uriTemplate text, as written, would be allowed;
 * each URI read through it is still checked on its own.
 */
const LISTED: Readonly<Record<string, { items: string; call: string; key: string }>> = {
  'tools/list': { items: 'tools', call: 'tools/call', key: 'name' },
  'prompts/list': { items: 'prompts', call: 'prompts/get', key: 'name' },
  'resources/list': { items: 'resources', call: 'resources/read', key: 'uri' },
  'resources/templates/list': { items: 'resourceTemplates', call: 'resources/read', key: 'uriTemplate' },
};

export const FILTERED_LISTS: ReadonlySet<string> = new Set(Object.keys(LISTED));

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** The rules of auth.rules, or what is wrong with them. */
export function parseRules(raw: Readonly<Record<string, unknown>>): { rules: ScopeRule[]; problems: string[] } {
  const rules: ScopeRule[] = [];
  const problems: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const space = key.indexOf(' ');
    const method = space < 0 ? key : key.slice(0, space);
    const pattern = space < 0 ? undefined : key.slice(space + 1).trim();
    if (method === '' || pattern === '') problems.push(`auth.rules: "${key}" is not "method" or "method name-pattern"`);
    // RFC 6749 §3.3 scope-token syntax: it also keeps a challenge's scope="…" well-formed.
    if (!Array.isArray(value) || value.length === 0 || !value.every((s) => typeof s === 'string' && SCOPE_TOKEN.test(s))) {
      problems.push(`auth.rules.${key}: expected a non-empty list of scope names`);
      continue;
    }
    rules.push({ method: method === '*' ? undefined : method, name: pattern ? globToRegExp(pattern) : undefined, scopes: value as string[] });
  }
  return { rules, problems };
}

/**
 * Whether filterList could drop an item of this list for the grant: some rule that may apply to
 * the call deciding its items asks for a scope the grant lacks. False for any other method.
 */
export function mayHide(rules: readonly ScopeRule[], granted: ReadonlySet<string>, method: string): boolean {
  const shape = LISTED[method];
  return shape !== undefined && rules.some((r) => (r.method === undefined || r.method === shape.call) && r.scopes.some((s) => !granted.has(s)));
}

/** Every scope the matching rules name, in rule order, each once. */
export function requiredScopes(rules: readonly ScopeRule[], method: string, name: string | undefined): string[] {
  const out = new Set<string>();
  for (const r of rules) {
    if (r.method !== undefined && r.method !== method) continue;
    if (r.name !== undefined && (name === undefined || !r.name.test(name))) continue;
    for (const s of r.scopes) out.add(s);
  }
  return [...out];
}

export function missingScopes(rules: readonly ScopeRule[], granted: ReadonlySet<string>, method: string, name: string | undefined): string[] {
  const needed = requiredScopes(rules, method, name);
  return needed.some((s) => !granted.has(s)) ? needed : [];
}

/** A tools, prompts, resources or resource templates list result holding only the items the grant may call. */
export function filterList(rules: readonly ScopeRule[], granted: ReadonlySet<string>, method: string, result: JsonObject): JsonObject {
  const shape = LISTED[method];
  const items = shape ? result[shape.items] : undefined;
  if (!shape || !Array.isArray(items)) return result;
  const visible = items.filter((item) => {
    const name = isObject(item) ? item[shape.key] : undefined;
    return typeof name === 'string' && missingScopes(rules, granted, shape.call, name).length === 0;
  });
  return { ...result, [shape.items]: visible };
}

/** The scopes every request needs: those of the rules naming neither a method nor a name. */
export function baselineScopes(rules: readonly ScopeRule[]): string[] {
  return [...new Set(rules.filter((r) => r.method === undefined && r.name === undefined).flatMap((r) => r.scopes))];
}

/** Every scope named by a rule, for the metadata's scopes_supported. */
export function scopesNamed(rules: readonly ScopeRule[]): string[] {
  return [...new Set(rules.flatMap((r) => r.scopes))];
}
