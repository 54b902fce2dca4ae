// auth.rules: the scopes a request needs. A key is a method (or `*`, any method), optionally
// followed by a space and a name pattern (`*` matches any run of characters) matched against
// the tool or prompt name, or the resource URI. Every rule that matches applies, so a request
// needs the union of their scopes; a rule with a pattern matches only requests carrying a name.
// Parsed here, so that the loader refuses bad rules at start-up; auth/rules.ts applies them.

import { globToRegExp } from '../glob.js';

export interface ScopeRule {
  method: string | undefined;
  name: RegExp | undefined;
  scopes: readonly string[];
}

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
    if (
      !Array.isArray(value) ||
      value.length === 0 ||
      !value.every((s) => typeof s === 'string' && SCOPE_TOKEN.test(s))
    ) {
      problems.push(`auth.rules.${key}: expected a non-empty list of scope names`);
      continue;
    }
    rules.push({
      method: method === '*' ? undefined : method,
      name: pattern ? globToRegExp(pattern) : undefined,
      scopes: value as string[],
    });
  }
  return { rules, problems };
}
