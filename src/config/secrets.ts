// A secret still holding the placeholder it was shipped with (deploy/base, config/*.example.json:
// `REPLACE-with-32-random-characters`, `REPLACEwithBase64of32randomBytesXXXXXXXXXXX=`, ...) is a
// publicly known key: refused at start-up, by the setting's name and never with its value.

import { SETTINGS, type Config } from './schema.js';

/** A shipped placeholder: `REPLACE…`, or `replace-with…` (config/*.example.json writes it so). */
const PLACEHOLDER = /^(?:REPLACE|[Rr]eplace[-_]?with)/;

/** Whether a word of `value` (`Bearer REPLACE-…` too) is a placeholder. */
function isPlaceholder(value: string): boolean {
  return value.split(/\s+/).some((word) => PLACEHOLDER.test(word));
}

/** Secrets Causeway's operator makes; the others are credentials an upstream or issuer gave. */
const MADE = new Set([
  'principal.hashSecret',
  'mrtr.stateKeys',
  'store.redisUrl',
  'store.redisPassword',
  'store.redisSentinelPassword',
]);
const MAKE = 'make a real one with `openssl rand -base64 32` (every replica needs the same)';
const GIVEN = 'set the real credential its issuer gave';

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

const refused = (where: string, how: string) =>
  `${where}: still the shipped placeholder (REPLACE…), not a secret; ${how}`;

/** Each placeholder among the values of a map of strings (headers, env, credentials), by name. */
function inMap(where: string, v: unknown, how: string): string[] {
  if (typeof v !== 'object' || v === null) return [];
  const named = Object.entries(v).filter(([, x]) => typeof x === 'string' && isPlaceholder(x));
  return named.map(([k]) => refused(`${where}.${k}`, how));
}

/** Every secret setting (the schema marks them), and each upstreams entry's, that is a placeholder. */
export function placeholderProblems(c: Config): string[] {
  const problems: string[] = [];
  for (const s of SETTINGS) {
    if (!s.secret) continue;
    const how = MADE.has(s.path) ? MAKE : GIVEN;
    const v = s.path.split('.').reduce<unknown>((o, part) => (o as Record<string, unknown>)[part], c);
    if (s.path === 'store.redisUrl') {
      // Percent-encoded or not (load.ts refuses one that does not decode).
      const password = URL.canParse(v as string) ? new URL(v as string).password : '';
      if (isPlaceholder(password) || isPlaceholder(safeDecode(password))) {
        problems.push(refused('store.redisUrl (its password)', how));
      }
    } else if (typeof v === 'string') {
      if (isPlaceholder(v)) problems.push(refused(s.path, how));
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => {
        if (typeof x === 'string' && isPlaceholder(x)) problems.push(refused(`${s.path}[${i}]`, how));
      });
    } else problems.push(...inMap(s.path, v, how));
  }
  for (const [name, entry] of Object.entries(c.upstreams)) {
    if (typeof entry !== 'object' || entry === null) continue;
    const raw = entry as Record<string, unknown>;
    for (const key of ['headers', 'env', 'credentials']) {
      problems.push(...inMap(`upstreams.${name}.${key}`, raw[key], GIVEN));
    }
  }
  return problems;
}
