// Builds the one immutable Config: defaults, then a JSON file (--config or CAUSEWAY_CONFIG),
// then CAUSEWAY_* environment variables, then --flags. Every problem found is reported at
// once; nothing reads process.env after start-up (a reload is given the start-up's own).

import { readFileSync } from 'node:fs';
import { authProblems } from './auth.js';
import { deepFreeze, getPath, setPath } from './live.js';
import { placeholderProblems } from './secrets.js';
import { QUOTA_WINDOWS, SETTINGS, type Config } from './schema.js';
import { holds, type NamedSetting, type Setting } from './setting.js';
import { isHeaderName, resolveTopology } from './topology.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export function envName(path: string): string {
  return (
    'CAUSEWAY_' +
    path
      .replace(/\./g, '_')
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .toUpperCase()
  );
}

export function flagName(path: string): string {
  return '--' + path;
}

const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

/** How a map entry without a usable name is shown: a secret map's only up to its first `:` or space. */
function entryShown(s: Setting, entry: string, n: number): string {
  if (!s.secret) return `"${entry}"`;
  const name = entry.split(/[:\s]/)[0]!;
  return name !== entry && name !== '' ? `"${name}: …"` : `${n} (not shown: it may hold a secret)`;
}

/**
 * Parses a string from env or a flag (`from` names which) into the setting's kind; undefined,
 * with the reason in `problems`, when the text is not a value of that kind.
 */
function fromText(s: NamedSetting, text: string, from: string, problems: string[]): { value: unknown } | undefined {
  const refuse = (what: string, shown = `"${text}"`) => {
    problems.push(`${s.path}: expected ${what}, not ${shown} (from ${from})`);
    return undefined;
  };
  switch (s.kind) {
    case 'string':
      return { value: text };
    case 'number':
      return NUMBER.test(text.trim()) ? { value: Number(text) } : refuse('a number');
    case 'boolean': {
      const word = text.trim().toLowerCase();
      if (word === 'true' || word === '1') return { value: true };
      if (word === 'false' || word === '0') return { value: false };
      return refuse('true or false (or 1 or 0)');
    }
    case 'list':
      return {
        value: text
          .split(',')
          .map((x) => x.trim())
          .filter((x) => x !== ''),
      };
    case 'map': {
      const out: Record<string, string> = {};
      let ok = true;
      // A blank entry (a trailing comma) is nothing; any other entry is name=value, or refused.
      const entries = text.split(',').filter((pair) => pair.trim() !== '');
      entries.forEach((pair, i) => {
        const eq = pair.indexOf('=');
        const name = eq < 0 ? '' : pair.slice(0, eq).trim();
        if (eq < 0 || name === '') {
          ok = false;
          const why = eq < 0 ? 'has no "=": expected name=value' : 'has an empty name: expected name=value';
          problems.push(`${s.path}: entry ${entryShown(s, pair.trim(), i + 1)} ${why} (from ${from})`);
        } else out[name] = pair.slice(eq + 1).trim();
      });
      return ok ? { value: out } : undefined;
    }
    case 'json':
      try {
        return { value: JSON.parse(text) as unknown };
      } catch {
        // Not the parser's message: it quotes the text, which may hold a secret.
        problems.push(`${s.path}: expected a JSON object, but it is not valid JSON (from ${from})`);
        return undefined;
      }
  }
}

/**
 * Checks every setting in `cfg` holds a value of its type, what is wrong with each that does not
 * going to `problems`; those get their default back, so that the cross-checks can still run, and
 * their paths are returned.
 */
function settleSettings(cfg: Record<string, unknown>, problems: string[]): Set<string> {
  const bad = new Set<string>();
  for (const s of SETTINGS) {
    if (holds(s, s.path, getPath(cfg, s.path), problems)) continue;
    bad.add(s.path);
    setPath(cfg, s.path, structuredClone(s.default));
  }
  return bad;
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

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The settings a config file gives, by path. A top-level key with dots is the setting it names
 * (`{"upstream.url": …}` is `{"upstream": {"url": …}}`); one given both ways, or any key that is no
 * setting, is a problem.
 */
function readFile(file: string, problems: string[], text?: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  let fromFile: unknown;
  try {
    fromFile = JSON.parse(text ?? readFileSync(file, 'utf8'));
  } catch (err) {
    problems.push(`cannot read config file ${file}: ${(err as Error).message}`);
    return out;
  }
  if (!isObject(fromFile)) {
    problems.push(`${file}: expected a JSON object of settings`);
    return out;
  }
  const known = new Set(SETTINGS.map((s) => s.path));
  const give = (path: string, value: unknown) => {
    if (!known.has(path)) problems.push(`${file}: unknown setting ${path}`);
    else if (out.has(path)) {
      problems.push(`${file}: ${path} is given twice, as "${path}" and nested in "${path.split('.')[0]}"`);
    } else out.set(path, value);
  };
  // Nested keys first, so that the message for a setting given twice reads the same either way.
  const entries = Object.entries(fromFile).sort(([a], [b]) => Number(a.includes('.')) - Number(b.includes('.')));
  for (const [key, body] of entries) {
    if (known.has(key) || key.includes('.')) give(key, body);
    else if (!isObject(body)) {
      const section = SETTINGS.some((s) => s.path.startsWith(`${key}.`));
      problems.push(`${file}: ${section ? `${key}: expected an object of its settings` : `unknown setting ${key}`}`);
    } else for (const [name, value] of Object.entries(body)) give(`${key}.${name}`, value);
  }
  return out;
}

/** The config file the flags or the environment name, if any. */
export function configFile(argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  return parseFlags(argv).flags.get('config') ?? env.CAUSEWAY_CONFIG;
}

/**
 * The Config the defaults, the file, the environment and the flags make. `fileText`: the file's
 * text already read (a reload reads it without blocking); else it is read here, at start-up.
 */
export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv, fileText?: string): Config {
  const { flags, problems } = parseFlags(argv);
  const cfg: Record<string, unknown> = {};
  for (const s of SETTINGS) setPath(cfg, s.path, structuredClone(s.default));

  const file = flags.get('config') ?? env.CAUSEWAY_CONFIG;
  flags.delete('config');
  if (file) for (const [path, value] of readFile(file, problems, fileText)) setPath(cfg, path, value);
  // A value that is not text of its kind keeps the one before it, and is not checked again.
  const unreadable = new Set<string>();
  for (const s of SETTINGS) {
    const name = envName(s.path);
    const text = env[name];
    if (text === undefined) continue;
    const read = fromText(s, text, name, problems);
    if (read) setPath(cfg, s.path, read.value);
    else unreadable.add(s.path);
  }
  for (const [name, text] of flags) {
    const s = SETTINGS.find((x) => x.path === name);
    if (!s) problems.push(`unknown flag --${name}`);
    else {
      const read = fromText(s, text, `--${name}`, problems);
      if (read) setPath(cfg, s.path, read.value);
      else unreadable.add(s.path);
    }
  }
  const bad = new Set([...unreadable, ...settleSettings(cfg, problems)]);
  // Every setting now holds a value of its type (a bad one its default): the cross-checks run
  // too, so that start-up lists every problem at once. Those naming a bad setting are left out:
  // they would be about its default, not about what was given.
  const typed = cfg as Config;
  problems.push(...crossChecks(typed).filter((p) => ![...bad].some((path) => p.includes(path))));
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(typed);
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
  if (c.admin.port > 0 && c.admin.port === c.listen.port) problems.push('admin.port: must differ from listen.port');
  problems.push(...storeProblems(c.store), ...stateKeyProblems(c), ...placeholderProblems(c));
  const badNames = c.security.credentialHeaders.filter((n) => !isHeaderName(n));
  if (badNames.length > 0) problems.push(`security.credentialHeaders: not header names: ${badNames.join(', ')}`);
  for (const [method, o] of Object.entries(c.limits.rateMethods)) {
    const ok =
      typeof o === 'object' &&
      o !== null &&
      typeof o.ratePerSecond === 'number' &&
      o.ratePerSecond > 0 &&
      (o.burst === undefined || (Number.isInteger(o.burst) && o.burst >= 1));
    if (!ok || Object.keys(o).some((k) => k !== 'ratePerSecond' && k !== 'burst')) {
      problems.push(`limits.rateMethods.${method}: expected {"ratePerSecond": > 0, "burst": integer >= 1 (optional)}`);
    }
  }
  problems.push(...quotaProblems(c.quotas.rules, new Set(topology.mounts.map((m) => m.path))));
  if (c.cache.store === 'redis' && c.store.kind !== 'redis') problems.push('cache.store: redis needs store.kind=redis');
  for (const [method, o] of Object.entries(c.cache.methods)) {
    if (!isObject(o)) {
      problems.push(`cache.methods.${method}: expected an object`);
      continue;
    }
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
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
      problems.push('store.redisUrl: must be redis:// or rediss://');
    try {
      for (const part of [url.username, url.password]) decodeURIComponent(part);
    } catch {
      problems.push('store.redisUrl: its user or password has a % not followed by two hex digits (write % as %25)');
    }
    const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
    if (!Number.isInteger(db) || db < 0) problems.push('store.redisUrl: the path must be a database number');
    else if (db !== 0 && s.redisCluster.length > 0) problems.push('store.redisUrl: Redis Cluster has only database 0');
  }
  if (s.redisCluster.length > 0 && s.redisSentinels.length > 0)
    problems.push('store.redisSentinels and store.redisCluster exclude each other');
  for (const key of ['redisSentinels', 'redisCluster'] as const) {
    const bad = s[key].filter((n) => !HOST_PORT.test(n.trim()));
    if (bad.length > 0) problems.push(`store.${key}: not host:port: ${bad.join(', ')}`);
    const ports = s[key].map((n) => /:(\d+)$/.exec(n.trim())?.[1]).filter((p) => p !== undefined);
    const outside = ports.map(Number).filter((p) => p < 1 || p > 65_535);
    if (outside.length > 0) problems.push(`store.${key}: a port is 1 to 65535, not ${outside.join(', ')}`);
  }
  if (/[{}]/.test(s.keyPrefix)) problems.push('store.keyPrefix: must not contain { or }');
  if (s.redisTlsCaFile) {
    try {
      // Read as the store will read it (a folder is readable, but not a file of PEM).
      readFileSync(s.redisTlsCaFile);
    } catch {
      problems.push(`store.redisTlsCaFile: cannot read ${s.redisTlsCaFile}`);
    }
  }
  return problems;
}

function stateKeyProblems(c: Config): string[] {
  const keys = c.mrtr.stateKeys;
  if (keys.length === 0 && c.store.kind === 'redis') {
    // Without them each replica seals requestState under a random key of its own, and a retry
    // that lands on another replica is refused (-32602) instead of being handed to its call.
    return [
      'mrtr.stateKeys: required with store.kind redis: every replica must open the requestState the others sealed, ' +
        'or a multi-round retry that lands on another replica fails; make a key with `openssl rand -base64 32` ' +
        'and give every replica the same list',
    ];
  }
  const bad = keys.filter((k) => Buffer.from(k, 'base64').length !== 32).length;
  return bad === 0 ? [] : [`mrtr.stateKeys: every key must be 32 bytes, base64 (${bad} is not)`];
}

const QUOTA_KEYS = new Set(['limit', 'per', 'mount', 'name', 'methods']);

/** What is wrong with `quotas.rules`, every problem named. */
function quotaProblems(rules: Readonly<Record<string, unknown>>, mounts: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  for (const [name, o] of Object.entries(rules)) {
    const at = `quotas.rules.${name}`;
    if (!isObject(o)) {
      problems.push(`${at}: expected an object`);
      continue;
    }
    if (!(Number.isInteger(o.limit) && (o.limit as number) >= 1))
      problems.push(`${at}.limit: expected an integer >= 1`);
    if (!QUOTA_WINDOWS.includes(o.per as never)) problems.push(`${at}.per: expected minute, hour or day`);
    if (o.mount !== undefined && !(typeof o.mount === 'string' && mounts.has(o.mount))) {
      problems.push(`${at}.mount: not a mount path (${[...mounts].join(', ')})`);
    }
    if (o.name !== undefined && typeof o.name !== 'string') problems.push(`${at}.name: expected a glob`);
    const { methods } = o;
    if (methods !== undefined && !(Array.isArray(methods) && methods.every((m) => typeof m === 'string'))) {
      problems.push(`${at}.methods: expected a list of methods`);
    }
    const unknown = Object.keys(o).filter((k) => !QUOTA_KEYS.has(k));
    if (unknown.length > 0) problems.push(`${at}: unknown ${unknown.join(', ')}`);
  }
  return problems;
}
