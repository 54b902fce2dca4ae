// mounts.<path>.tools, .prompts and .resources: what a mount's view shows of what it serves. Read
// and checked here, at start-up, every problem reported at once beside the other config errors;
// view.ts applies a checked spec. Names and URIs are those the mount serves before its view (a
// federated mount's names with their member's prefix); `rename` gives a kept name the one its
// clients see instead, `describe` a new description.

import { globToRegExp } from '../glob.js';

/** One kind's part of a view: tools or prompts (by name), or resources (by URI, allow and deny only). */
export interface KindSpec {
  /** Globs (`*`: any run of characters); a name must match one to be shown. Undefined: every name. */
  allow?: string[];
  /** Globs; a name matching one is hidden, whatever `allow` says. */
  deny: string[];
  /** Name as the mount serves it -> the name its clients see instead. */
  rename: Record<string, string>;
  /** Name as the mount serves it -> the description its clients see. */
  describe: Record<string, string>;
}

export interface ViewSpec {
  tools?: KindSpec;
  prompts?: KindSpec;
  resources?: KindSpec;
}

export type ViewKind = keyof ViewSpec;
export const VIEW_KINDS: readonly ViewKind[] = ['tools', 'prompts', 'resources'];

/** What a client-visible name is made of: letters, digits and `_ - . /` (and `:` for prompts' sake), 1-128. */
const VISIBLE_NAME = /^[A-Za-z0-9_\-./:]{1,128}$/;

type Raw = Record<string, unknown>;
const isRaw = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The view of a mount's raw settings; undefined when it has none. `problems` learns what is wrong. */
export function viewSpec(where: string, raw: Raw, problems: string[]): ViewSpec | undefined {
  let spec: ViewSpec | undefined;
  for (const kind of VIEW_KINDS) {
    if (raw[kind] === undefined) continue;
    const part = kindSpec(`${where}.${kind}`, kind, raw[kind], problems);
    if (part) spec = { ...spec, [kind]: part };
  }
  return spec;
}

function kindSpec(where: string, kind: ViewKind, raw: unknown, problems: string[]): KindSpec | undefined {
  if (!isRaw(raw)) {
    problems.push(`${where}: expected an object of allow, deny${kind === 'resources' ? '' : ', rename, describe'}`);
    return undefined;
  }
  const keys = kind === 'resources' ? ['allow', 'deny'] : ['allow', 'deny', 'rename', 'describe'];
  for (const k of Object.keys(raw)) if (!keys.includes(k)) problems.push(`${where}: unknown setting ${k}`);
  const allow = raw.allow === undefined ? undefined : globs(`${where}.allow`, raw.allow, problems);
  const spec: KindSpec = {
    ...(allow ? { allow } : {}),
    deny: raw.deny === undefined ? [] : globs(`${where}.deny`, raw.deny, problems),
    rename: texts(`${where}.rename`, raw.rename, problems),
    describe: texts(`${where}.describe`, raw.describe, problems),
  };
  checkNames(where, spec, problems);
  return spec;
}

/** A list of globs: non-empty strings without control characters or spaces. */
function globs(where: string, raw: unknown, problems: string[]): string[] {
  if (!Array.isArray(raw) || !raw.every((g) => typeof g === 'string')) {
    problems.push(`${where}: expected a list of name patterns`);
    return [];
  }
  const out: string[] = [];
  for (const [i, g] of (raw as string[]).entries()) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    if (g === '' || /[\s\x00-\x1f\x7f]/.test(g)) problems.push(`${where}[${i}]: "${g}" is not a name pattern`);
    else out.push(g);
  }
  return out;
}

/** name -> text; a name is one name, not a pattern. */
function texts(where: string, raw: unknown, problems: string[]): Record<string, string> {
  if (raw === undefined) return {};
  if (!isRaw(raw) || !Object.values(raw).every((v) => typeof v === 'string')) {
    problems.push(`${where}: expected an object of name -> text`);
    return {};
  }
  for (const name of Object.keys(raw))
    if (name.includes('*')) problems.push(`${where}.${name}: names one name, not a pattern`);
  return { ...(raw as Record<string, string>) };
}

/**
 * What cannot be told apart once renamed: a name two names become, a new name another kept name
 * already has, a renamed or described name the view hides, a new name no client could send.
 */
function checkNames(where: string, spec: KindSpec, problems: string[]): void {
  const shown = visibleTest(spec);
  const targets = new Map<string, string>();
  for (const [from, to] of Object.entries(spec.rename)) {
    if (!VISIBLE_NAME.test(to)) problems.push(`${where}.rename.${from}: "${to}" is not a valid name`);
    const other = targets.get(to);
    if (other !== undefined) problems.push(`${where}.rename: ${other} and ${from} are both renamed ${to}`);
    targets.set(to, from);
    if (!shown(from)) problems.push(`${where}.rename.${from}: renames a name the view hides`);
  }
  for (const [from, to] of Object.entries(spec.rename)) {
    // A kept name that stays as it is, and that the rename would shadow.
    if (to !== from && spec.rename[to] === undefined && shown(to) && isLiteral(spec, to))
      problems.push(`${where}.rename.${from}: ${to} is already a name the view shows`);
  }
  for (const name of Object.keys(spec.describe))
    if (!shown(name)) problems.push(`${where}.describe.${name}: describes a name the view hides`);
}

/** Whether the spec names `name` as one the mount serves (allowed outright, or described), known at start-up. */
function isLiteral(spec: KindSpec, name: string): boolean {
  return spec.allow?.includes(name) === true || spec.describe[name] !== undefined;
}

/** Whether allow and deny show a name (before any rename). */
export function visibleTest(spec: Pick<KindSpec, 'allow' | 'deny'>): (name: string) => boolean {
  const allow = spec.allow?.map(globToRegExp);
  const deny = spec.deny.map(globToRegExp);
  return (name) => (allow === undefined || allow.some((r) => r.test(name))) && !deny.some((r) => r.test(name));
}
