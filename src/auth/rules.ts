// Applying auth.rules (parsed by config/scope-rules.ts, which says their syntax): the scopes a
// request needs, and list results filtered to what the grant may call.

import type { ScopeRule } from '../config/index.js';
import { isObject, type JsonObject } from '../jsonrpc.js';

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

/**
 * Whether filterList could drop an item of this list for the grant: some rule that may apply to
 * the call deciding its items asks for a scope the grant lacks. False for any other method.
 */
export function mayHide(rules: readonly ScopeRule[], granted: ReadonlySet<string>, method: string): boolean {
  const shape = LISTED[method];
  return (
    shape !== undefined &&
    rules.some((r) => (r.method === undefined || r.method === shape.call) && r.scopes.some((s) => !granted.has(s)))
  );
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

export function missingScopes(
  rules: readonly ScopeRule[],
  granted: ReadonlySet<string>,
  method: string,
  name: string | undefined,
): string[] {
  const needed = requiredScopes(rules, method, name);
  return needed.some((s) => !granted.has(s)) ? needed : [];
}

/** A tools, prompts, resources or resource templates list result holding only the items the grant may call. */
export function filterList(
  rules: readonly ScopeRule[],
  granted: ReadonlySet<string>,
  method: string,
  result: JsonObject,
): JsonObject {
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
