// One row of the settings table (schema.ts): its kind, default, doc line and limits. Each row is
// made by the constructor of its kind, which gives it the type its value parses to, so the Config
// type is read off the table instead of being declared beside it.

type Kind = 'string' | 'number' | 'boolean' | 'list' | 'map' | 'json';

export interface Setting<T = unknown> {
  readonly kind: Kind;
  readonly default: T;
  readonly doc: string;
  readonly choices?: readonly string[];
  /** Smallest number accepted (numbers only; 0 unless given). */
  readonly min?: number;
  /** Largest number accepted (numbers only; none unless given). */
  readonly max?: number;
  /** Numbers only: a fraction is accepted (a rate, a share); otherwise the number must be whole. */
  readonly fraction?: boolean;
  /** The value is, or holds, a secret: never shown, and never a shipped placeholder (checks.ts). */
  readonly secret?: boolean;
}

/** A setting with its dotted path (`listen.port`), as the loaders, --help and the README name it. */
export interface NamedSetting extends Setting {
  readonly path: string;
}

/** A group of settings: `listen`, `upstream`, ... */
export type Section = Readonly<Record<string, Setting>>;

/** What a section holds once loaded: each row's value, by its key. */
export type SectionValues<S extends Record<keyof S, Setting>> = { [K in keyof S]: S[K]['default'] };

/** What a table of settings and sections holds once loaded: the table's shape, each row's value type. */
export type ValuesOf<T extends Readonly<Record<string, Setting | Section>>> = {
  [K in keyof T]: T[K] extends Setting ? T[K]['default'] : T[K] extends Section ? SectionValues<T[K]> : never;
};

/** Options of a string, list or map setting. */
interface Opts {
  secret?: boolean;
}

export const text = (value: string, doc: string, { secret }: Opts = {}): Setting<string> => ({
  kind: 'string',
  default: value,
  doc,
  secret,
});

export const oneOf = <const C extends readonly string[]>(
  choices: C,
  value: C[number],
  doc: string,
): Setting<C[number]> => ({
  kind: 'string',
  default: value,
  doc,
  choices,
});

/** Options of a number setting. */
interface NumberOpts {
  min?: number;
  max?: number;
  fraction?: boolean;
}

/** A number: whole unless `fraction`, at least `min` (0), at most `max` when given. */
export const num = (value: number, doc: string, { min = 0, max, fraction }: NumberOpts = {}): Setting<number> => ({
  kind: 'number',
  default: value,
  doc,
  min,
  max,
  fraction,
});

/** A TCP port: a whole number up to 65535, at least `min` (0: any free port; -1 where it means off). */
export const port = (value: number, doc: string, { min = 0 } = {}): Setting<number> =>
  num(value, doc, { min, max: 65_535 });

export const flag = (value: boolean, doc: string): Setting<boolean> => ({ kind: 'boolean', default: value, doc });

export const list = (value: string[], doc: string, { secret }: Opts = {}): Setting<string[]> => ({
  kind: 'list',
  default: value,
  doc,
  secret,
});

/** Names to strings (`key=value,...` in env and flags); empty by default. */
export const map = (doc: string, { secret }: Opts = {}): Setting<Record<string, string>> => ({
  kind: 'map',
  default: {},
  doc,
  secret,
});

/** Names to JSON values of type V, checked further where they are used; empty by default. */
export const json = <V>(doc: string): Setting<Record<string, V>> => ({ kind: 'json', default: {}, doc });

export function isSetting(entry: Setting | Section): entry is Setting {
  return typeof entry.doc === 'string';
}

/**
 * What is wrong with `v` as the value of `s` at `where`; undefined when nothing. `whole`: numbers
 * must be integers too (an `upstreams` entry's are counts and milliseconds).
 */
function valueProblem(s: Setting, where: string, v: unknown, whole = false): string | undefined {
  const bad = (what: string) => `${where}: expected ${what}`;
  switch (s.kind) {
    case 'string':
      if (typeof v !== 'string') return bad('a string');
      if (s.choices && !s.choices.includes(v)) return bad(`one of ${s.choices.join(', ')}`);
      return undefined;
    case 'number': {
      const min = s.min ?? 0;
      const integer = whole || s.fraction !== true;
      const inRange = (n: number) => n >= min && (s.max === undefined || n <= s.max);
      if (typeof v === 'number' && Number.isFinite(v) && inRange(v) && (!integer || Number.isInteger(v))) {
        return undefined;
      }
      const range = s.max === undefined ? `>= ${min}` : `from ${min} to ${s.max}`;
      return bad(`${integer ? 'an integer' : 'a number'} ${range}`) + (typeof v === 'number' ? `, not ${v}` : '');
    }
    case 'boolean':
      return typeof v === 'boolean' ? undefined : bad('true or false');
    case 'list':
      return Array.isArray(v) && v.every((x) => typeof x === 'string') ? undefined : bad('a list of strings');
    case 'map': {
      const isObject = typeof v === 'object' && v !== null && !Array.isArray(v);
      if (!isObject || !Object.values(v).every((x) => typeof x === 'string')) return bad('an object of strings');
      return Object.keys(v).some((k) => k.trim() === '') ? `${where}: a name is empty` : undefined;
    }
    case 'json':
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? undefined : bad('a JSON object');
  }
}

/** Whether `v` is a value of `s`; if not, what is wrong goes to `problems`. */
export function holds<S extends Setting>(
  s: S,
  where: string,
  v: unknown,
  problems: string[],
  whole = false,
): v is S['default'] {
  const p = valueProblem(s, where, v, whole);
  if (p !== undefined) problems.push(p);
  return p === undefined;
}
