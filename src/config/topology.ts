// The upstreams and mounts a Config describes, with every default filled in. A config that names
// no `upstreams` has one, built from the `upstream.*` settings and served at `listen.path`; with
// `upstreams`, those settings are the defaults of each entry and `mounts` say what is served where.

import { deepFreeze } from './live.js';
import { UPSTREAM_SETTINGS, type CacheScope, type Config } from './schema.js';
import { holds, type SectionValues, type Setting } from './setting.js';
import { credentialSpec, type CredentialSpec } from './credentials.js';
import { viewSpec, type ViewSpec } from '../view/index.js';

/** An upstream's cache.* settings: its entry's over the global ones. */
/** What an upstream's answers are told (ttlMs, cacheScope), by method: the cache.* hints, per upstream. */
export type CachePolicy = Pick<Config['cache'], 'ttlMs' | 'scope' | 'methods'>;

type UpstreamSettings = Config['upstream'];

/** One upstream: the `upstream.*` settings, with its own URLs and cache policy. */
export interface UpstreamSpec extends Omit<UpstreamSettings, 'url' | 'credentials'> {
  /** Equivalent URLs (replicas of one deployment); sessions are spread over them. Empty for stdio. */
  urls: string[];
  cache: CachePolicy;
  /** Causeway's own token for the upstream; undefined: only the configured headers. */
  credentials: CredentialSpec | undefined;
}

/** Pins requests to one member of a mount: by method, by name pattern (`*` any run of characters), or both. */
export interface RouteRule {
  method?: string;
  name?: string;
  upstream: string;
}

/** A folder of skills and the URI prefix its skills are served under (skill://<prefix>/<name>/...). */
export interface SkillRoot {
  dir: string;
  /** '/'-separated segments; '' for none. */
  prefix: string;
}

export interface MountSpec {
  path: string;
  /** Members in priority order: on a name conflict the earlier one wins. */
  upstreams: string[];
  /** Prefix put before the tool and prompt names of each member; `{upstream}` is the member's name. */
  prefix: string;
  pageSize: number;
  routes: RouteRule[];
  /**
   * The skills folders served on the mount: the mount's folder, or on a federated mount one
   * subfolder per member (named as the member), its skills under <prefix>/<member>. Empty: none.
   */
  skills: SkillRoot[];
  /** tools, prompts, resources: what the mount's clients see of what it serves (a virtual server); none: all of it. */
  view?: ViewSpec;
}

export interface Topology {
  upstreams: UpstreamSpec[];
  mounts: MountSpec[];
}

export const DEFAULT_PREFIX = '{upstream}__';
export const DEFAULT_PAGE_SIZE = 100;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const RESERVED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The upstream.* settings an `upstreams` entry may not give as they are: its name is its key, url may be urls,
 * credentials become a spec.
 */
const APART: ReadonlySet<string> = new Set(['name', 'url', 'credentials']);
/** An entry's keys: every upstream.* setting but the name, urls beside url, and a cache of its own. */
const UPSTREAM_KEYS: ReadonlySet<string> = new Set([
  ...Object.keys(UPSTREAM_SETTINGS).filter((k) => k !== 'name'),
  'urls',
  'cache',
]);
const MOUNT_KEYS = new Set(['upstreams', 'prefix', 'pageSize', 'routes', 'skills', 'tools', 'prompts', 'resources']);
/** A skills URI prefix: segments of URI-safe characters, the first one a valid authority (reg-name). */
const SKILLS_PREFIX = /^[A-Za-z0-9._~-]+(?:\/[A-Za-z0-9._~-]+)*$/;

type Raw = Record<string, unknown>;
const isRaw = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/** Whether `name` is an HTTP field name (a token), in any case [RFC 9110 §5.1]. */
export function isHeaderName(name: string): boolean {
  return HEADER_NAME.test(name.toLowerCase());
}

/** Problems with a forwardHeaders list: each entry a header name, or a prefix ending in `*`. */
function forwardListProblems(where: string, list: readonly string[]): string[] {
  const bad = list.filter((n) => {
    const name = n.toLowerCase();
    const stem = name.endsWith('*') ? name.slice(0, -1) : name;
    return !(stem === '' ? name === '*' : HEADER_NAME.test(stem) && !stem.includes('*'));
  });
  return bad.length === 0 ? [] : [`${where}: not header names or name prefixes ending in *: ${bad.join(', ')}`];
}

function checkUrl(where: string, url: unknown, problems: string[]): url is string {
  if (typeof url !== 'string') {
    problems.push(`${where}: required, an absolute http(s) URL`);
    return false;
  }
  try {
    const u = new URL(url);
    if (u.protocol === 'http:' || u.protocol === 'https:') return true;
    problems.push(`${where}: must be http(s)`);
  } catch {
    problems.push(`${where}: required, an absolute http(s) URL`);
  }
  return false;
}

function num(where: string, v: unknown, fallback: number, min: number, problems: string[]): number {
  if (v === undefined) return fallback;
  if (typeof v === 'number' && Number.isInteger(v) && v >= min) return v;
  problems.push(`${where}: expected an integer >= ${min}`);
  return fallback;
}

function cacheMethods(
  where: string,
  v: unknown,
  problems: string[],
): Record<string, { ttlMs?: number; scope?: CacheScope }> {
  const out: Record<string, { ttlMs?: number; scope?: CacheScope }> = {};
  if (!isRaw(v)) {
    problems.push(`${where}: expected an object`);
    return out;
  }
  for (const [method, o] of Object.entries(v)) {
    if (!isRaw(o)) {
      problems.push(`${where}.${method}: expected an object`);
      continue;
    }
    if (o.scope !== undefined && o.scope !== 'public' && o.scope !== 'private')
      problems.push(`${where}.${method}.scope: expected public or private`);
    if (o.ttlMs !== undefined && !(Number.isInteger(o.ttlMs) && (o.ttlMs as number) >= 0)) {
      problems.push(`${where}.${method}.ttlMs: expected a non-negative integer`);
    }
    out[method] = o as { ttlMs?: number; scope?: CacheScope };
  }
  return out;
}

/** Sets `into[key]` to the entry's own value, when it gives one its setting accepts; whether it did. */
function take<S extends Record<keyof S, Setting>, K extends keyof S & string>(
  settings: S,
  into: SectionValues<S>,
  key: K,
  raw: Raw,
  where: string,
  problems: string[],
): boolean {
  const v = raw[key];
  // An entry's numbers are counts and milliseconds: whole.
  if (v === undefined || !holds(settings[key], `${where}.${key}`, v, problems, true)) return false;
  into[key] = v;
  return true;
}

/** Settings only a stdio upstream uses: given to another transport, they would do nothing. */
const STDIO_ONLY = ['command', 'args', 'env', 'cwd', 'maxProcesses', 'stdioPool'] as const;

/**
 * Settings given where they cannot apply, each a start-up problem rather than silently nothing:
 * `given` tells the settings the entry (or upstream.*, for the one upstream) set itself.
 */
function inapplicable(own: UpstreamSettings, given: (key: keyof UpstreamSettings) => boolean, where: string): string[] {
  const problems: string[] = [];
  // HTTP+SSE is the 2024-11-05 transport: no 2026-07-28 server speaks it.
  if (own.transport === 'sse' && own.era === 'modern') {
    const why = 'a 2024-11-05 HTTP+SSE server is legacy';
    problems.push(`${where}.era: modern cannot apply to transport sse (${why}); use legacy or auto`);
  }
  if (own.transport !== 'stdio') {
    for (const key of STDIO_ONLY) {
      if (given(key)) problems.push(`${where}.${key}: only for transport stdio, not ${own.transport}`);
    }
  }
  return problems;
}

function upstreamSpec(name: string, raw: Raw, c: Config, problems: string[], alone = false): UpstreamSpec {
  const where = `upstreams.${name}`;
  for (const k of Object.keys(raw)) if (!UPSTREAM_KEYS.has(k)) problems.push(`${where}: unknown setting ${k}`);
  const own: UpstreamSettings = { ...c.upstream };
  const taken = new Set<string>();
  for (const key of Object.keys(UPSTREAM_SETTINGS) as (keyof UpstreamSettings)[]) {
    if (!APART.has(key) && take(UPSTREAM_SETTINGS, own, key, raw, where, problems)) taken.add(key);
  }
  // An entry's headers and env add to upstream.*'s; its other settings replace them.
  const headers = { ...c.upstream.headers, ...own.headers };
  const env = { ...c.upstream.env, ...own.env };
  if (taken.has('forwardHeaders')) problems.push(...forwardListProblems(`${where}.forwardHeaders`, own.forwardHeaders));
  if (taken.has('taskTools') && own.taskTools.includes(''))
    problems.push(`${where}.taskTools: expected a list of tool names`);
  if (own.transport === 'stdio' && own.command.trim() === '')
    problems.push(`${where}.command: required when transport is stdio`);
  let urls: string[] = [];
  if (raw.urls !== undefined && raw.url !== undefined) problems.push(`${where}: give url or urls, not both`);
  if (own.transport === 'stdio') {
    if (raw.urls !== undefined || raw.url !== undefined)
      problems.push(`${where}: url and urls are not used when transport is stdio`);
  } else if (raw.urls !== undefined) {
    if (!Array.isArray(raw.urls) || raw.urls.length === 0)
      problems.push(`${where}.urls: expected a non-empty list of URLs`);
    else urls = raw.urls.filter((u, i): u is string => checkUrl(`${where}.urls[${i}]`, u, problems));
  } else if (checkUrl(`${where}.url`, raw.url, problems)) urls = [raw.url as string];
  if (new Set(urls).size !== urls.length) problems.push(`${where}.urls: a URL is listed twice`);
  // An HTTP+SSE session lives on the connection that opened it: there is nothing to spread. auto
  // finds its transport at one URL.
  if (own.transport === 'sse' && urls.length > 1)
    problems.push(`${where}.urls: transport sse takes one URL (the SSE endpoint)`);
  if (own.transport === 'auto' && urls.length > 1)
    problems.push(`${where}.urls: transport auto takes one URL; give several to streamable-http`);
  const cache: CachePolicy = { ttlMs: c.cache.ttlMs, scope: c.cache.scope, methods: { ...c.cache.methods } };
  if (raw.cache !== undefined) {
    if (!isRaw(raw.cache)) problems.push(`${where}.cache: expected an object`);
    else {
      cache.ttlMs = num(`${where}.cache.ttlMs`, raw.cache.ttlMs, cache.ttlMs, 0, problems);
      if (raw.cache.scope !== undefined) {
        if (raw.cache.scope === 'public' || raw.cache.scope === 'private') cache.scope = raw.cache.scope;
        else problems.push(`${where}.cache.scope: expected public or private`);
      }
      if (raw.cache.methods !== undefined)
        cache.methods = { ...cache.methods, ...cacheMethods(`${where}.cache.methods`, raw.cache.methods, problems) };
    }
  }
  // What differs from its default, and for an entry what it holds itself (not upstream.*'s defaults).
  const given = (key: keyof UpstreamSettings) =>
    (alone || taken.has(key)) && JSON.stringify(own[key]) !== JSON.stringify(UPSTREAM_SETTINGS[key].default);
  problems.push(...inapplicable(own, given, where));
  const credentials = credentialSpec(`${where}.credentials`, raw.credentials ?? c.upstream.credentials, problems);
  if (credentials && own.transport !== 'streamable-http')
    problems.push(`${where}.credentials: only for transport streamable-http`);
  if (credentials && Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) {
    problems.push(`${where}: give credentials or an Authorization header, not both`);
  }
  const { url: _url, credentials: _credentials, ...rest } = own;
  return { ...rest, name, urls, headers, env, args: [...own.args], credentials, cache };
}

function routeRules(where: string, v: unknown, members: readonly string[], problems: string[]): RouteRule[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) {
    problems.push(`${where}: expected a list of {method?, name?, upstream}`);
    return [];
  }
  const rules: RouteRule[] = [];
  for (const [i, r] of (v as unknown[]).entries()) {
    const at = `${where}[${i}]`;
    const bad = (why: string) => problems.push(`${at}${why}`);
    if (!isRaw(r)) {
      bad(': expected an object');
      continue;
    }
    for (const k of Object.keys(r)) if (!['method', 'name', 'upstream'].includes(k)) bad(`: unknown setting ${k}`);
    if (typeof r.upstream !== 'string' || !members.includes(r.upstream))
      bad('.upstream: must name a member of the mount');
    else if (r.method !== undefined && typeof r.method !== 'string') bad('.method: expected a string');
    else if (r.name !== undefined && typeof r.name !== 'string') bad('.name: expected a string');
    else if (r.method === undefined && r.name === undefined) bad(': needs a method, a name, or both');
    else {
      const rule: RouteRule = { upstream: r.upstream };
      if (typeof r.method === 'string') rule.method = r.method;
      if (typeof r.name === 'string') rule.name = r.name;
      rules.push(rule);
    }
  }
  return rules;
}

/** A mount's skills folders: the one folder, or one per member of a federated mount. */
function skillRoots(dir: string, prefix: string, members: readonly string[]): SkillRoot[] {
  if (dir === '') return [];
  if (members.length === 1) return [{ dir, prefix }];
  return members.map((m) => ({ dir: `${dir.replace(/\/+$/, '')}/${m}`, prefix: prefix === '' ? m : `${prefix}/${m}` }));
}

function mountSpec(path: string, raw: Raw, known: ReadonlySet<string>, c: Config, problems: string[]): MountSpec {
  const where = `mounts.${path}`;
  for (const k of Object.keys(raw)) if (!MOUNT_KEYS.has(k)) problems.push(`${where}: unknown setting ${k}`);
  if (!path.startsWith('/')) problems.push(`${where}: a mount path must start with /`);
  if (RESERVED_PATHS.has(path)) problems.push(`${where}: ${path} is reserved for probes`);
  let upstreams: string[] = [];
  if (
    !Array.isArray(raw.upstreams) ||
    raw.upstreams.length === 0 ||
    !raw.upstreams.every((u) => typeof u === 'string')
  ) {
    problems.push(`${where}.upstreams: expected a non-empty list of upstream names`);
  } else {
    upstreams = raw.upstreams as string[];
    for (const u of upstreams) if (!known.has(u)) problems.push(`${where}.upstreams: no upstream named ${u}`);
    if (new Set(upstreams).size !== upstreams.length) problems.push(`${where}.upstreams: an upstream is listed twice`);
  }
  let prefix = DEFAULT_PREFIX;
  if (raw.prefix !== undefined) {
    if (typeof raw.prefix === 'string') prefix = raw.prefix;
    else problems.push(`${where}.prefix: expected a string`);
  }
  let skills = '';
  if (raw.skills !== undefined) {
    if (typeof raw.skills === 'string') skills = raw.skills;
    else problems.push(`${where}.skills: expected the path of a skills folder`);
  }
  return {
    path,
    upstreams,
    prefix,
    pageSize: num(`${where}.pageSize`, raw.pageSize, DEFAULT_PAGE_SIZE, 1, problems),
    routes: routeRules(`${where}.routes`, raw.routes, upstreams, problems),
    skills: skillRoots(skills, c.skills.prefix, upstreams),
    ...withView(viewSpec(where, raw, problems)),
  };
}

const withView = (view: ViewSpec | undefined): { view?: ViewSpec } => (view ? { view } : {});

const resolved = new WeakMap<Config, Readonly<{ topology: Topology; problems: readonly string[] }>>();

/**
 * The topology of a config, and every problem with it (empty when usable): worked out once per
 * Config (the loader checks it, the app builds from it) and frozen.
 */
export function resolveTopology(c: Config): Readonly<{ topology: Topology; problems: readonly string[] }> {
  let r = resolved.get(c);
  if (r === undefined) {
    r = deepFreeze(workOutTopology(c));
    resolved.set(c, r);
  }
  return r;
}

function workOutTopology(c: Config): { topology: Topology; problems: string[] } {
  const problems: string[] = forwardListProblems('upstream.forwardHeaders', c.upstream.forwardHeaders);
  const upstreams: UpstreamSpec[] = [];
  const entries = Object.entries(c.upstreams);
  if (entries.length === 0) {
    const own: string[] = [];
    const ownRaw = c.upstream.transport === 'stdio' && c.upstream.url === '' ? {} : { url: c.upstream.url };
    upstreams.push(upstreamSpec(c.upstream.name, ownRaw, c, own, true));
    const entry = `upstreams.${c.upstream.name}`;
    problems.push(
      ...own.map((p) =>
        p.startsWith(`${entry}.`)
          ? `upstream.${p.slice(entry.length + 1)}`
          : p.startsWith(`${entry}:`)
            ? `upstream${p.slice(entry.length)}`
            : p,
      ),
    );
    if (!NAME.test(c.upstream.name))
      problems.push('upstream.name: letters, digits, _ . - (64 at most), starting with a letter or digit');
  } else {
    if (c.upstream.url !== '')
      problems.push('upstream.url: not used when upstreams are configured; give each upstream its url');
    for (const [name, raw] of entries) {
      if (!NAME.test(name))
        problems.push(
          `upstreams.${name}: a name is letters, digits, _ . - (64 at most), starting with a letter or digit`,
        );
      if (!isRaw(raw)) problems.push(`upstreams.${name}: expected an object`);
      else upstreams.push(upstreamSpec(name, raw, c, problems));
    }
  }
  const known = new Set(upstreams.map((u) => u.name));
  const mounts: MountSpec[] = [];
  const mountEntries = Object.entries(c.mounts);
  if (mountEntries.length === 0) {
    if (upstreams.length > 1) problems.push('mounts: required when several upstreams are configured');
    else if (upstreams.length === 1) {
      const skills = skillRoots(c.skills.dir, c.skills.prefix, [upstreams[0]!.name]);
      mounts.push({
        path: c.listen.path,
        upstreams: [upstreams[0]!.name],
        prefix: DEFAULT_PREFIX,
        pageSize: DEFAULT_PAGE_SIZE,
        routes: [],
        skills,
      });
    }
  } else {
    if (c.skills.dir !== '')
      problems.push('skills.dir: not used when mounts are configured; give each mount its skills');
    for (const [path, raw] of mountEntries) {
      if (!isRaw(raw)) problems.push(`mounts.${path}: expected an object`);
      else mounts.push(mountSpec(path, raw, known, c, problems));
    }
  }
  if (c.skills.prefix !== '' && !SKILLS_PREFIX.test(c.skills.prefix))
    problems.push('skills.prefix: segments of letters, digits and . _ ~ -, separated by /');
  return { topology: { upstreams, mounts }, problems };
}
