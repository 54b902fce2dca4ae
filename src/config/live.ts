// A Config's values as a whole: frozen, read and written by path, compared and hashed; and what
// a reload may change in a running replica, and what only a restart can: the settings a reload
// applies (live), the others it leaves as they are and names, and the hash a Config is known by
// (causeway_build_info, the reload's log line).

import { createHash } from 'node:crypto';
import { SETTINGS, type Config } from './schema.js';

/** Freezes a value and everything it holds: a built Config and its topology are read-only. */
export function deepFreeze<T>(o: T): T {
  if (typeof o === 'object' && o !== null && !Object.isFrozen(o)) {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

export function getPath(obj: Record<string, unknown>, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

export function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (const part of parts.slice(0, -1)) {
    const next = cur[part];
    if (typeof next !== 'object' || next === null) cur[part] = {};
    cur = cur[part] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = value;
}

/**
 * Settings a reload applies, by path or `section.` prefix: the upstreams, the mounts and their
 * views and skills, the scope rules, the limits a request meets at the door, quotas, cache
 * policy, the Hosts and Origins let in, and what the access and audit logs write. The rest (ports, TLS, store, auth
 * mode and keys, principal, sessions, rounds, tasks, listens, drain, log level) need a restart.
 */
export const LIVE_SETTINGS: readonly string[] = [
  'listen.path',
  'limits.maxBodyBytes',
  'limits.bodyTimeoutMs',
  'limits.maxInFlight',
  'limits.ratePerSecond',
  'limits.rateBurst',
  'limits.rateMethods',
  'limits.maxJsonDepth',
  'limits.maxJsonItems',
  'security.allowedHosts',
  'security.allowedOrigins',
  'auth.rules',
  'upstream.',
  'upstreams',
  'mounts',
  'quotas.',
  'cache.ttlMs',
  'cache.scope',
  'cache.methods',
  'skills.',
  'log.accessSample',
  'log.audit',
];

export function isLive(path: string): boolean {
  return LIVE_SETTINGS.some((p) => (p.endsWith('.') ? path.startsWith(p) : path === p));
}

/**
 * The Config a reload runs with: `next`'s live settings over `running`'s others, and the
 * settings `next` changes that need a restart (not applied).
 */
export function liveChanges(running: Config, next: Config): { applied: Config; restartNeeded: string[] } {
  const applied = structuredClone(running) as unknown as Record<string, unknown>;
  const restartNeeded: string[] = [];
  for (const { path } of SETTINGS) {
    const value = getPath(next as unknown as Record<string, unknown>, path);
    if (isLive(path)) setPath(applied, path, structuredClone(value));
    else if (!same(value, getPath(running as unknown as Record<string, unknown>, path))) restartNeeded.push(path);
  }
  return { applied: deepFreeze(applied as unknown as Config), restartNeeded };
}

/** Whether two values of a setting are the same, whatever the order of an object's keys. */
export function same(a: unknown, b: unknown): boolean {
  return stableJson(a) === stableJson(b);
}

/** The first 12 hex digits of the SHA-256 of the Config's settings: which configuration runs. */
export function configHash(config: Config): string {
  return createHash('sha256').update(stableJson(config)).digest('hex').slice(0, 12);
}

function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
      : v,
  );
}
