// The upstreams and mounts a Config describes, with every default filled in. A config that names
// no `upstreams` has one, built from the `upstream.*` settings and served at `listen.path`; with
// `upstreams`, those settings are the defaults of each entry and `mounts` say what is served where.

import { CREDENTIAL_GRANTS, STANDING_STREAMS, type CredentialGrant, type CredentialSpec, type StandingStream } from '../upstream/index.js';
import { deepFreeze } from './freeze.js';
import { UPSTREAM_TRANSPORTS, type CacheScope, type Config, type UpstreamTransport } from './schema.js';

export interface CachePolicy {
  ttlMs: number;
  scope: CacheScope;
  methods: Readonly<Record<string, { ttlMs?: number; scope?: CacheScope }>>;
}

/** One upstream: the `upstream.*` settings, with its own URLs and cache policy. */
export interface UpstreamSpec extends Omit<Config['upstream'], 'url' | 'credentials'> {
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

export interface MountSpec {
  path: string;
  /** Members in priority order: on a name conflict the earlier one wins. */
  upstreams: string[];
  /** Prefix put before the tool and prompt names of each member; `{upstream}` is the member's name. */
  prefix: string;
  pageSize: number;
  routes: RouteRule[];
}

export interface Topology {
  upstreams: UpstreamSpec[];
  mounts: MountSpec[];
}

export const DEFAULT_PREFIX = '{upstream}__';
export const DEFAULT_PAGE_SIZE = 100;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const RESERVED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

const UPSTREAM_KEYS = new Set([
  'url',
  'urls',
  'headers',
  'forwardHeaders',
  'taskTools',
  'standingStream',
  'protocolVersion',
  'connectTimeoutMs',
  'requestTimeoutMs',
  'maxResponseBytes',
  'ejectAfterFailures',
  'ejectMs',
  'cache',
  'credentials',
  'transport',
  'command',
  'args',
  'env',
  'cwd',
  'maxProcesses',
]);
const MOUNT_KEYS = new Set(['upstreams', 'prefix', 'pageSize', 'routes']);

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

function cacheMethods(where: string, v: unknown, problems: string[]): Record<string, { ttlMs?: number; scope?: CacheScope }> {
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
    if (o.scope !== undefined && o.scope !== 'public' && o.scope !== 'private') problems.push(`${where}.${method}.scope: expected public or private`);
    if (o.ttlMs !== undefined && !(Number.isInteger(o.ttlMs) && (o.ttlMs as number) >= 0)) {
      problems.push(`${where}.${method}.ttlMs: expected a non-negative integer`);
    }
    out[method] = o as { ttlMs?: number; scope?: CacheScope };
  }
  return out;
}

function upstreamSpec(name: string, raw: Raw, c: Config, problems: string[]): UpstreamSpec {
  const where = `upstreams.${name}`;
  for (const k of Object.keys(raw)) if (!UPSTREAM_KEYS.has(k)) problems.push(`${where}: unknown setting ${k}`);
  const stdio = stdioSpec(where, raw, c, problems);
  let urls: string[] = [];
  if (raw.urls !== undefined && raw.url !== undefined) problems.push(`${where}: give url or urls, not both`);
  if (stdio.transport === 'stdio') {
    if (raw.urls !== undefined || raw.url !== undefined) problems.push(`${where}: url and urls are not used when transport is stdio`);
  } else if (raw.urls !== undefined) {
    if (!Array.isArray(raw.urls) || raw.urls.length === 0) problems.push(`${where}.urls: expected a non-empty list of URLs`);
    else urls = raw.urls.filter((u, i): u is string => checkUrl(`${where}.urls[${i}]`, u, problems));
  } else if (checkUrl(`${where}.url`, raw.url, problems)) urls = [raw.url as string];
  if (new Set(urls).size !== urls.length) problems.push(`${where}.urls: a URL is listed twice`);
  // An HTTP+SSE session lives on the connection that opened it: there is nothing to spread. auto
  // finds its transport at one URL.
  if (stdio.transport === 'sse' && urls.length > 1) problems.push(`${where}.urls: transport sse takes one URL (the SSE endpoint)`);
  if (stdio.transport === 'auto' && urls.length > 1) problems.push(`${where}.urls: transport auto takes one URL; give several to streamable-http`);
  let headers: Record<string, string> = { ...c.upstream.headers };
  if (raw.headers !== undefined) {
    if (isRaw(raw.headers) && Object.values(raw.headers).every((v) => typeof v === 'string')) {
      headers = { ...headers, ...(raw.headers as Record<string, string>) };
    } else problems.push(`${where}.headers: expected an object of strings`);
  }
  let forwardHeaders = c.upstream.forwardHeaders;
  if (raw.forwardHeaders !== undefined) {
    if (Array.isArray(raw.forwardHeaders) && raw.forwardHeaders.every((v) => typeof v === 'string')) {
      forwardHeaders = raw.forwardHeaders as string[];
      problems.push(...forwardListProblems(`${where}.forwardHeaders`, forwardHeaders));
    } else problems.push(`${where}.forwardHeaders: expected a list of header names`);
  }
  let taskTools = c.upstream.taskTools;
  if (raw.taskTools !== undefined) {
    if (Array.isArray(raw.taskTools) && raw.taskTools.every((v) => typeof v === 'string' && v !== '')) taskTools = raw.taskTools as string[];
    else problems.push(`${where}.taskTools: expected a list of tool names`);
  }
  let standingStream = c.upstream.standingStream;
  if (raw.standingStream !== undefined) {
    if (typeof raw.standingStream === 'string' && (STANDING_STREAMS as readonly string[]).includes(raw.standingStream)) standingStream = raw.standingStream as StandingStream;
    else problems.push(`${where}.standingStream: expected one of ${STANDING_STREAMS.join(', ')}`);
  }
  let protocolVersion = c.upstream.protocolVersion;
  if (raw.protocolVersion !== undefined) {
    if (typeof raw.protocolVersion === 'string') protocolVersion = raw.protocolVersion;
    else problems.push(`${where}.protocolVersion: expected a string`);
  }
  const cache: CachePolicy = { ttlMs: c.cache.ttlMs, scope: c.cache.scope, methods: { ...c.cache.methods } };
  if (raw.cache !== undefined) {
    if (!isRaw(raw.cache)) problems.push(`${where}.cache: expected an object`);
    else {
      cache.ttlMs = num(`${where}.cache.ttlMs`, raw.cache.ttlMs, cache.ttlMs, 0, problems);
      if (raw.cache.scope !== undefined) {
        if (raw.cache.scope === 'public' || raw.cache.scope === 'private') cache.scope = raw.cache.scope;
        else problems.push(`${where}.cache.scope: expected public or private`);
      }
      if (raw.cache.methods !== undefined) cache.methods = { ...cache.methods, ...cacheMethods(`${where}.cache.methods`, raw.cache.methods, problems) };
    }
  }
  const credentials = credentialSpec(`${where}.credentials`, raw.credentials ?? c.upstream.credentials, problems);
  if (credentials && stdio.transport !== 'streamable-http') problems.push(`${where}.credentials: only for transport streamable-http`);
  if (credentials && Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) {
    problems.push(`${where}: give credentials or an Authorization header, not both`);
  }
  return {
    name,
    urls,
    headers,
    credentials,
    forwardHeaders,
    taskTools,
    standingStream,
    protocolVersion,
    connectTimeoutMs: num(`${where}.connectTimeoutMs`, raw.connectTimeoutMs, c.upstream.connectTimeoutMs, 0, problems),
    requestTimeoutMs: num(`${where}.requestTimeoutMs`, raw.requestTimeoutMs, c.upstream.requestTimeoutMs, 0, problems),
    maxResponseBytes: num(`${where}.maxResponseBytes`, raw.maxResponseBytes, c.upstream.maxResponseBytes, 0, problems),
    ejectAfterFailures: num(`${where}.ejectAfterFailures`, raw.ejectAfterFailures, c.upstream.ejectAfterFailures, 1, problems),
    ejectMs: num(`${where}.ejectMs`, raw.ejectMs, c.upstream.ejectMs, 0, problems),
    ...stdio,
    cache,
  };
}

const CREDENTIAL_KEYS = new Set(['grant', 'tokenUrl', 'issuer', 'clientId', 'clientSecret', 'scope', 'resource', 'audience']);
const LOOPBACK = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])$/;

/** An upstream's credentials entry (an object of strings); undefined when there is none. */
function credentialSpec(where: string, v: unknown, problems: string[]): CredentialSpec | undefined {
  if (!isRaw(v) || !Object.values(v).every((x) => typeof x === 'string')) {
    problems.push(`${where}: expected an object of strings`);
    return undefined;
  }
  if (Object.keys(v).length === 0) return undefined;
  const o = v as Record<string, string>;
  for (const k of Object.keys(o)) if (!CREDENTIAL_KEYS.has(k)) problems.push(`${where}: unknown setting ${k}`);
  if (!(CREDENTIAL_GRANTS as readonly string[]).includes(o.grant ?? '')) problems.push(`${where}.grant: expected one of ${CREDENTIAL_GRANTS.join(', ')}`);
  // A user's sign-in finds the endpoints in the issuer's metadata; the other grants name the token endpoint.
  const signIn = o.grant === 'authorization_code';
  // Without a clientId a sign-in is made as Causeway's metadata document or a registered client.
  for (const k of signIn ? ['issuer'] : ['tokenUrl', 'clientId', 'clientSecret']) if (!o[k]) problems.push(`${where}.${k}: required`);
  if (signIn && o.clientSecret && !o.clientId) problems.push(`${where}.clientSecret: only with a clientId`);
  if (signIn && o.tokenUrl) problems.push(`${where}.tokenUrl: not for grant authorization_code (the issuer's metadata names it)`);
  if (!signIn && o.issuer) problems.push(`${where}.issuer: only for grant authorization_code`);
  for (const k of ['tokenUrl', 'issuer']) {
    if (!o[k]) continue;
    try {
      const u = new URL(o[k]);
      // The client secret and the users' codes go there: in the clear only on this machine.
      if (u.protocol !== 'https:' && !(u.protocol === 'http:' && LOOPBACK.test(u.hostname))) problems.push(`${where}.${k}: must be https (http only on loopback)`);
    } catch {
      problems.push(`${where}.${k}: expected an absolute URL`);
    }
  }
  if (o.resource && !URL.canParse(o.resource)) problems.push(`${where}.resource: expected an absolute URL`);
  if (o.audience && o.grant !== 'token_exchange') problems.push(`${where}.audience: only for grant token_exchange`);
  return {
    grant: o.grant as CredentialGrant,
    tokenUrl: o.tokenUrl ?? '',
    issuer: o.issuer ?? '',
    clientId: o.clientId ?? '',
    clientSecret: o.clientSecret ?? '',
    scope: o.scope ?? '',
    resource: o.resource ?? '',
    audience: o.audience ?? '',
  };
}

type StdioFields = Pick<UpstreamSpec, 'transport' | 'command' | 'args' | 'env' | 'cwd' | 'maxProcesses'>;

/** transport and the stdio settings of one upstream entry, upstream.* giving the defaults. */
function stdioSpec(where: string, raw: Raw, c: Config, problems: string[]): StdioFields {
  let transport = c.upstream.transport;
  if (raw.transport !== undefined) {
    if (typeof raw.transport === 'string' && (UPSTREAM_TRANSPORTS as readonly string[]).includes(raw.transport)) transport = raw.transport as UpstreamTransport;
    else problems.push(`${where}.transport: expected one of ${UPSTREAM_TRANSPORTS.join(', ')}`);
  }
  const str = (key: 'command' | 'cwd'): string => {
    const v = raw[key];
    if (v === undefined) return c.upstream[key];
    if (typeof v === 'string') return v;
    problems.push(`${where}.${key}: expected a string`);
    return c.upstream[key];
  };
  const command = str('command');
  const cwd = str('cwd');
  let args = c.upstream.args;
  if (raw.args !== undefined) {
    if (Array.isArray(raw.args) && raw.args.every((a) => typeof a === 'string')) args = raw.args as string[];
    else problems.push(`${where}.args: expected a list of strings`);
  }
  let env: Record<string, string> = { ...c.upstream.env };
  if (raw.env !== undefined) {
    if (isRaw(raw.env) && Object.values(raw.env).every((v) => typeof v === 'string')) env = { ...env, ...(raw.env as Record<string, string>) };
    else problems.push(`${where}.env: expected an object of strings`);
  }
  if (transport === 'stdio' && command.trim() === '') problems.push(`${where}.command: required when transport is stdio`);
  const maxProcesses = num(`${where}.maxProcesses`, raw.maxProcesses, c.upstream.maxProcesses, 1, problems);
  return { transport, command, args: [...args], env, cwd, maxProcesses };
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
    if (typeof r.upstream !== 'string' || !members.includes(r.upstream)) bad('.upstream: must name a member of the mount');
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

function mountSpec(path: string, raw: Raw, known: ReadonlySet<string>, problems: string[]): MountSpec {
  const where = `mounts.${path}`;
  for (const k of Object.keys(raw)) if (!MOUNT_KEYS.has(k)) problems.push(`${where}: unknown setting ${k}`);
  if (!path.startsWith('/')) problems.push(`${where}: a mount path must start with /`);
  if (RESERVED_PATHS.has(path)) problems.push(`${where}: ${path} is reserved for probes`);
  let upstreams: string[] = [];
  if (!Array.isArray(raw.upstreams) || raw.upstreams.length === 0 || !raw.upstreams.every((u) => typeof u === 'string')) {
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
  return {
    path,
    upstreams,
    prefix,
    pageSize: num(`${where}.pageSize`, raw.pageSize, DEFAULT_PAGE_SIZE, 1, problems),
    routes: routeRules(`${where}.routes`, raw.routes, upstreams, problems),
  };
}

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
    upstreams.push(upstreamSpec(c.upstream.name, ownRaw, c, own));
    const entry = `upstreams.${c.upstream.name}`;
    problems.push(...own.map((p) => (p.startsWith(`${entry}.`) ? `upstream.${p.slice(entry.length + 1)}` : p.startsWith(`${entry}:`) ? `upstream${p.slice(entry.length)}` : p)));
    if (!NAME.test(c.upstream.name)) problems.push('upstream.name: letters, digits, _ . - (64 at most), starting with a letter or digit');
  } else {
    if (c.upstream.url !== '') problems.push('upstream.url: not used when upstreams are configured; give each upstream its url');
    for (const [name, raw] of entries) {
      if (!NAME.test(name)) problems.push(`upstreams.${name}: a name is letters, digits, _ . - (64 at most), starting with a letter or digit`);
      if (!isRaw(raw)) problems.push(`upstreams.${name}: expected an object`);
      else upstreams.push(upstreamSpec(name, raw, c, problems));
    }
  }
  const known = new Set(upstreams.map((u) => u.name));
  const mounts: MountSpec[] = [];
  const mountEntries = Object.entries(c.mounts);
  if (mountEntries.length === 0) {
    if (upstreams.length > 1) problems.push('mounts: required when several upstreams are configured');
    else if (upstreams.length === 1) mounts.push({ path: c.listen.path, upstreams: [upstreams[0]!.name], prefix: DEFAULT_PREFIX, pageSize: DEFAULT_PAGE_SIZE, routes: [] });
  } else {
    for (const [path, raw] of mountEntries) {
      if (!isRaw(raw)) problems.push(`mounts.${path}: expected an object`);
      else mounts.push(mountSpec(path, raw, known, problems));
    }
  }
  return { topology: { upstreams, mounts }, problems };
}
