// Builds the one immutable Config: defaults, then a JSON file (--config or CAUSEWAY_CONFIG),
// then CAUSEWAY_* environment variables, then --flags. Every problem found is reported at
// once; nothing reads process.env after start-up.

import { accessSync, constants as fsConstants, readFileSync } from 'node:fs';
import { authProblems } from './auth.js';
import { deepFreeze } from './freeze.js';
import { SETTINGS, type Config } from './schema.js';
import { holds, type Setting } from './setting.js';
import { isHeaderName, resolveTopology } from './topology.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export function envName(path: string): string {
  return 'CAUSEWAY_' + path.replace(/\./g, '_').replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

export function flagName(path: string): string {
  return '--' + path;
}

function getPath(obj: Record<string, unknown>, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (const part of parts.slice(0, -1)) {
    const next = cur[part];
    if (typeof next !== 'object' || next === null) cur[part] = {};
    cur = cur[part] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = value;
}

/** Parses a string from env or a flag into the setting's kind. */
function fromText(s: Setting, text: string): unknown {
  switch (s.kind) {
    case 'string':
      return text;
    case 'number':
      return text.trim() === '' ? NaN : Number(text);
    case 'boolean':
      return text === 'true' || text === '1';
    case 'list':
      return text
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
    case 'map': {
      const out: Record<string, string> = {};
      for (const pair of text.split(',')) {
        const eq = pair.indexOf('=');
        if (eq > 0) out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
      }
      return out;
    }
    case 'json':
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return Symbol('invalid json');
      }
  }
}

/**
 * Whether every setting in `cfg` holds a value of its type, so that `cfg` is a Config; what is
 * wrong with each that does not goes to `problems`.
 */
function settingsHold(cfg: Record<string, unknown>, problems: string[]): cfg is Config {
  let ok = true;
  for (const s of SETTINGS) if (!holds(s, s.path, getPath(cfg, s.path), problems)) ok = false;
  return ok;
}

function parseFlags(argv: readonly string[]): { flags: Map<string, string>; problems: string[] } {
  const flags = new Map<string, string>();
  const problems: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      problems.push(`unexpected argument ${arg}`);
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq > 0) flags.set(arg.slice(2, eq), arg.slice(eq + 1));
    else if (i + 1 < argv.length) flags.set(arg.slice(2), argv[++i]!);
    else problems.push(`${arg} needs a value`);
  }
  return { flags, problems };
}

export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): Config {
  const { flags, problems } = parseFlags(argv);
  const cfg: Record<string, unknown> = {};
  for (const s of SETTINGS) setPath(cfg, s.path, structuredClone(s.default));

  const file = flags.get('config') ?? env.CAUSEWAY_CONFIG;
  flags.delete('config');
  if (file) {
    try {
      const fromFile = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      for (const s of SETTINGS) {
        const v = getPath(fromFile, s.path);
        if (v !== undefined) setPath(cfg, s.path, v);
      }
      const known = new Set(SETTINGS.map((s) => s.path));
      for (const [section, body] of Object.entries(fromFile)) {
        if (known.has(section)) continue;
        if (typeof body !== 'object' || body === null) {
          if (!known.has(section)) problems.push(`${file}: unknown setting ${section}`);
          continue;
        }
        for (const key of Object.keys(body)) {
          if (!known.has(`${section}.${key}`)) problems.push(`${file}: unknown setting ${section}.${key}`);
        }
      }
    } catch (err) {
      problems.push(`cannot read config file ${file}: ${(err as Error).message}`);
    }
  }
  for (const s of SETTINGS) {
    const text = env[envName(s.path)];
    if (text !== undefined) setPath(cfg, s.path, fromText(s, text));
  }
  for (const [name, text] of flags) {
    const s = SETTINGS.find((x) => x.path === name);
    if (!s) problems.push(`unknown flag --${name}`);
    else setPath(cfg, s.path, fromText(s, text));
  }
  if (!settingsHold(cfg, problems) || problems.length > 0) throw new ConfigError(problems);
  problems.push(...crossChecks(cfg));
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(cfg);
}

function crossChecks(c: Config): string[] {
  const problems: string[] = [];
  const { topology, problems: topologyProblems } = resolveTopology(c);
  problems.push(...topologyProblems);
  if (topologyProblems.length === 0) problems.push(...authProblems(c, topology));
  if (c.principal.mode !== 'none' && c.principal.hashSecret.length < 16) {
    problems.push('principal.hashSecret: required (16+ characters) when principal.mode is not none');
  }
  if (Boolean(c.listen.tlsCertFile) !== Boolean(c.listen.tlsKeyFile)) {
    problems.push('listen.tlsCertFile and listen.tlsKeyFile go together');
  }
  if (!c.listen.path.startsWith('/')) problems.push('listen.path: must start with /');
  if (!Number.isInteger(c.admin.port) || c.admin.port > 65_535) problems.push('admin.port: expected -1 (off), 0 (any free port) or a port number');
  else if (c.admin.port > 0 && c.admin.port === c.listen.port) problems.push('admin.port: must differ from listen.port');
  problems.push(...storeProblems(c.store), ...stateKeyProblems(c.mrtr.stateKeys));
  const badNames = c.security.credentialHeaders.filter((n) => !isHeaderName(n));
  if (badNames.length > 0) problems.push(`security.credentialHeaders: not header names: ${badNames.join(', ')}`);
  for (const [method, o] of Object.entries(c.limits.rateMethods)) {
    const ok = typeof o === 'object' && o !== null && typeof o.ratePerSecond === 'number' && o.ratePerSecond > 0 && (o.burst === undefined || (Number.isInteger(o.burst) && o.burst >= 1));
    if (!ok || Object.keys(o).some((k) => k !== 'ratePerSecond' && k !== 'burst')) {
      problems.push(`limits.rateMethods.${method}: expected {"ratePerSecond": > 0, "burst": integer >= 1 (optional)}`);
    }
  }
  if (c.cache.store === 'redis' && c.store.kind !== 'redis') problems.push('cache.store: redis needs store.kind=redis');
  for (const [method, o] of Object.entries(c.cache.methods)) {
    if (o.scope !== undefined && o.scope !== 'public' && o.scope !== 'private') {
      problems.push(`cache.methods.${method}.scope: expected public or private`);
    }
    if (o.ttlMs !== undefined && !(Number.isInteger(o.ttlMs) && o.ttlMs >= 0)) {
      problems.push(`cache.methods.${method}.ttlMs: expected a non-negative integer`);
    }
  }
  return problems;
}

const HOST_PORT = /^(?:\[[^\]]+\]|[^:[\]\s]+)(?::\d{1,5})?$/;

/** The Redis settings, checked here so that start-up lists them with every other problem. */
function storeProblems(s: Config['store']): string[] {
  if (s.kind !== 'redis') return [];
  const problems: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(s.redisUrl);
  } catch {
    problems.push('store.redisUrl: expected redis://[user:password@]host:port[/db] or rediss://…');
  }
  if (url) {
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') problems.push('store.redisUrl: must be redis:// or rediss://');
    const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
    if (!Number.isInteger(db) || db < 0) problems.push('store.redisUrl: the path must be a database number');
    else if (db !== 0 && s.redisCluster.length > 0) problems.push('store.redisUrl: Redis Cluster has only database 0');
  }
  if (s.redisCluster.length > 0 && s.redisSentinels.length > 0) problems.push('store.redisSentinels and store.redisCluster exclude each other');
  for (const key of ['redisSentinels', 'redisCluster'] as const) {
    const bad = s[key].filter((n) => !HOST_PORT.test(n.trim()));
    if (bad.length > 0) problems.push(`store.${key}: not host:port: ${bad.join(', ')}`);
  }
  if (/[{}]/.test(s.keyPrefix)) problems.push('store.keyPrefix: must not contain { or }');
  if (s.redisTlsCaFile) {
    try {
      accessSync(s.redisTlsCaFile, fsConstants.R_OK);
    } catch {
      problems.push(`store.redisTlsCaFile: cannot read ${s.redisTlsCaFile}`);
    }
  }
  return problems;
}

function stateKeyProblems(keys: readonly string[]): string[] {
  const bad = keys.filter((k) => Buffer.from(k, 'base64').length !== 32).length;
  return bad === 0 ? [] : [`mrtr.stateKeys: every key must be 32 bytes, base64 (${bad} is not)`];
}
