// Bounded values for the `name` label of one upstream: a tool or prompt name only once the
// upstream listed it to this replica, or to another that told it (tools/list, prompts/list results), resources/read by
// the resources/templates/list template its URI matches; anything else is `_other`, so clients naming any number of
// bogus tools add no series. At most MAX.names per kind are learned.

import { isObject, type JsonObject } from '../jsonrpc.js';

/** A name the upstream never listed here (or one past the bound). */
export const OTHER_NAME = '_other';
/** Methods that name nothing. */
export const NO_NAME = 'none';

/** The most learned of each kind, and the longest name, template and URI taken. */
const MAX = {
  names: 500,
  templates: 100,
  nameLength: 128,
  templateLength: 256,
  /** Longer URIs are not matched against templates (each template is a backtracking regex). */
  uriLength: 1024,
} as const;

interface Template {
  template: string;
  pattern: RegExp;
  /** Literal characters: the more, the more specific; the most specific match wins. */
  literal: number;
}

export class KnownNames {
  private readonly tools = new Set<string>();
  private readonly prompts = new Set<string>();
  private readonly templates: Template[] = [];

  /**
   * Learns from one page of a tools/list, prompts/list or resources/templates/list result; returns what it did not
   * know.
   */
  learn(method: string, result: JsonObject): string[] {
    switch (method) {
      case 'tools/list':
        return this.offer(method, namesOf(result.tools));
      case 'prompts/list':
        return this.offer(method, namesOf(result.prompts));
      case 'resources/templates/list':
        return this.offer(method, templatesOf(result.resourceTemplates));
      default:
        return [];
    }
  }

  /** Learns names (tool, prompt) or URI templates another replica's list named; returns those new here. */
  offer(method: string, items: readonly string[]): string[] {
    switch (method) {
      case 'tools/list':
        return learnNames(this.tools, items);
      case 'prompts/list':
        return learnNames(this.prompts, items);
      case 'resources/templates/list':
        return this.learnTemplates(items);
      default:
        return [];
    }
  }

  /** The label for a request's name (params.name or params.uri); NO_NAME for methods without one. */
  label(method: string, name: string | undefined): string {
    if (name === undefined) return NO_NAME;
    switch (method) {
      case 'tools/call':
        return this.tools.has(name) ? name : OTHER_NAME;
      case 'prompts/get':
        return this.prompts.has(name) ? name : OTHER_NAME;
      case 'resources/read':
        return this.templateOf(name);
      default:
        return NO_NAME;
    }
  }

  private templateOf(uri: string): string {
    if (uri.length > MAX.uriLength) return OTHER_NAME;
    for (const t of this.templates) if (t.pattern.test(uri)) return t.template;
    return OTHER_NAME;
  }

  private learnTemplates(list: readonly string[]): string[] {
    const added: string[] = [];
    for (const template of list) {
      if (this.templates.length >= MAX.templates) break;
      if (template.length > MAX.templateLength || this.templates.some((t) => t.template === template)) continue;
      const compiled = compileTemplate(template);
      if (!compiled) continue;
      this.templates.push({ template, ...compiled });
      added.push(template);
    }
    if (added.length > 0) this.templates.sort((x, y) => y.literal - x.literal);
    return added;
  }
}

function namesOf(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((item) => (isObject(item) && typeof item.name === 'string' ? [item.name] : []));
}

function templatesOf(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((item) => (isObject(item) && typeof item.uriTemplate === 'string' ? [item.uriTemplate] : []));
}

function learnNames(known: Set<string>, list: readonly string[]): string[] {
  const added: string[] = [];
  for (const name of list) {
    if (known.size >= MAX.names) break;
    if (name.length <= MAX.nameLength && !known.has(name)) {
      known.add(name);
      added.push(name);
    }
  }
  return added;
}

/** What each RFC 6570 operator expands to, as a regex fragment [RFC 6570 §3.2]. */
const EXPANSIONS: Record<string, string> = {
  '': '[^/?#]*',
  '+': '[^#]*',
  '#': '(?:#.*)?',
  '.': '(?:\\.[^/?#]*)*',
  '/': '(?:/[^/?#]*)*',
  ';': '(?:;[^/?#]*)*',
  '?': '(?:\\?[^#]*)?',
  '&': '(?:&[^#]*)*',
};

/** An RFC 6570 URI template as an anchored regex; undefined when it is not a well-formed template. */
export function compileTemplate(template: string): { pattern: RegExp; literal: number } | undefined {
  let source = '^';
  let literal = 0;
  let previous: string | undefined;
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    const text = open < 0 ? template.slice(i) : template.slice(i, open);
    if (text.includes('}')) return undefined;
    if (text !== '') {
      source += text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      literal += text.length;
      previous = undefined;
    }
    if (open < 0) break;
    const close = template.indexOf('}', open);
    if (close < 0) return undefined;
    const expr = template.slice(open + 1, close);
    const op = expr !== '' && '+#./;?&'.includes(expr[0]!) ? expr[0]! : '';
    const fragment = EXPANSIONS[op];
    if (fragment === undefined || expr.length === op.length) return undefined;
    // Two like expressions in a row match what one does; merged, they cannot backtrack against each other.
    if (fragment !== previous) source += fragment;
    previous = fragment;
    i = close + 1;
  }
  return { pattern: new RegExp(source + '$'), literal };
}
