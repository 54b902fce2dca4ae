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

export const text = (value: string, doc: string): Setting<string> => ({ kind: 'string', default: value, doc });

export const oneOf = <const C extends readonly string[]>(choices: C, value: C[number], doc: string): Setting<C[number]> => ({
  kind: 'string',
  default: value,
  doc,
  choices,
});

export const num = (value: number, doc: string, { min = 0 } = {}): Setting<number> => ({ kind: 'number', default: value, doc, min });

export const flag = (value: boolean, doc: string): Setting<boolean> => ({ kind: 'boolean', default: value, doc });

export const list = (value: string[], doc: string): Setting<string[]> => ({ kind: 'list', default: value, doc });

/** Names to strings (`key=value,...` in env and flags); empty by default. */
export const map = (doc: string): Setting<Record<string, string>> => ({ kind: 'map', default: {}, doc });

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
      if (whole) return typeof v === 'number' && Number.isInteger(v) && v >= min ? undefined : bad(`an integer >= ${min}`);
      if (typeof v === 'number' && Number.isFinite(v) && v >= min) return undefined;
      return bad(min === 0 ? 'a non-negative number' : `a number >= ${min}`);
    }
    case 'boolean':
      return typeof v === 'boolean' ? undefined : bad('true or false');
    case 'list':
      return Array.isArray(v) && v.every((x) => typeof x === 'string') ? undefined : bad('a list of strings');
    case 'map':
      return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string')
        ? undefined
        : bad('an object of strings');
    case 'json':
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? undefined : bad('a JSON object');
  }
}

/** Whether `v` is a value of `s`; if not, what is wrong goes to `problems`. */
export function holds<S extends Setting>(s: S, where: string, v: unknown, problems: string[], whole = false): v is S['default'] {
  const p = valueProblem(s, where, v, whole);
  if (p !== undefined) problems.push(p);
  return p === undefined;
}
