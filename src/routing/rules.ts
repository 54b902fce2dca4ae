// Route rules of a mount: the first rule whose method and name pattern both match pins the
// request to its upstream. A name pattern is literal but for `*`, which matches any run of
// characters; a rule with a name pattern matches only requests that carry a name.

import type { RouteRule } from '../config/index.js';
import { globToRegExp } from '../glob.js';

export { globToRegExp };

export interface CompiledRule {
  method: string | undefined;
  name: RegExp | undefined;
  upstream: string;
}

export function compileRules(rules: readonly RouteRule[]): CompiledRule[] {
  return rules.map((r) => ({
    method: r.method,
    name: r.name === undefined ? undefined : globToRegExp(r.name),
    upstream: r.upstream,
  }));
}

/** The upstream the first matching rule names, if any. */
export function pinnedUpstream(
  rules: readonly CompiledRule[],
  method: string,
  name: string | undefined,
): string | undefined {
  for (const r of rules) {
    if (r.method !== undefined && r.method !== method) continue;
    if (r.name !== undefined && (name === undefined || !r.name.test(name))) continue;
    return r.upstream;
  }
  return undefined;
}
