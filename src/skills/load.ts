// Reads skills folders into a Catalog, with fs.promises only. Each subfolder of a root is a
// skill: its SKILL.md must open with YAML frontmatter whose `name` is the folder's and that has
// a description; every file below it is one of its files. A skill that breaks a rule (no or bad
// frontmatter, a name that is not the folder's, over 512 files or 16 MiB [SKILLS "Limits"]) is
// left out and named in `problems`, never thrown. Names starting with `.` are skipped (a
// Kubernetes ConfigMap volume keeps its own `..data` there); a symlink is followed only when it
// stays inside the root, and each directory is walked once.

import { createHash } from 'node:crypto';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import type * as Yaml from 'yaml';
import type { SkillRoot } from '../config/index.js';
import { isObject, type JsonObject, type JsonValue } from '../jsonrpc.js';
import { onFirstUse } from '../on-first-use.js';
import { Catalog, type SkillEntry, type SkillFile } from './catalog.js';
import { skillUri } from './uri.js';

export const MAX_SKILL_FILES = 512;
export const MAX_SKILL_BYTES = 16 * 1024 * 1024;
const MAX_DEPTH = 32;
/** yaml, loaded when a SKILL.md is first read: a replica without skills (the default) never carries it. */
const yaml = onFirstUse<typeof Yaml>('yaml');
/** Agent Skills: 1-64 lowercase letters, digits and single hyphens. */
const SKILL_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

class Broken extends Error {}

export async function loadCatalog(roots: readonly SkillRoot[]): Promise<Catalog> {
  const skills: SkillEntry[] = [];
  const problems: string[] = [];
  for (const root of roots) {
    let top: string;
    try {
      top = await realpath(root.dir);
    } catch (err) {
      problems.push(`${root.dir}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      continue;
    }
    const prefix = root.prefix === '' ? [] : root.prefix.split('/');
    let names: string[];
    try {
      names = (await readdir(top)).sort();
    } catch (err) {
      problems.push(`${root.dir}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      continue;
    }
    for (const name of names) {
      if (name.startsWith('.')) continue;
      const dir = await inside(top, join(top, name));
      if (dir === undefined || !(await stat(dir)).isDirectory()) continue;
      try {
        skills.push(await loadSkill(top, dir, name, prefix));
      } catch (err) {
        const why = err instanceof Broken ? err.message : `cannot be read (${(err as Error).message})`;
        problems.push(`skill ${[...prefix, name].join('/')}: ${why}`);
      }
    }
  }
  return new Catalog(skills, problems);
}

/** The real path of `path` when it lies within `top`; undefined when it leaves it or is gone. */
async function inside(top: string, path: string): Promise<string | undefined> {
  try {
    const real = await realpath(path);
    return real === top || real.startsWith(top + sep) ? real : undefined;
  } catch {
    return undefined;
  }
}

async function loadSkill(top: string, dir: string, name: string, prefix: string[]): Promise<SkillEntry> {
  const files: Array<{ path: string[]; bytes: Buffer }> = [];
  let total = 0;
  const seen = new Set<string>();
  const walk = async (real: string, path: string[]): Promise<void> => {
    if (seen.has(real) || path.length > MAX_DEPTH) return;
    seen.add(real);
    for (const entry of (await readdir(real)).sort()) {
      if (entry.startsWith('.')) continue;
      const target = await inside(top, join(real, entry));
      if (target === undefined) continue;
      const s = await stat(target);
      if (s.isDirectory()) await walk(target, [...path, entry]);
      else if (s.isFile()) {
        if (files.length >= MAX_SKILL_FILES) throw new Broken(`more than ${MAX_SKILL_FILES} files`);
        total += s.size;
        if (total > MAX_SKILL_BYTES) throw new Broken(`more than ${MAX_SKILL_BYTES} bytes`);
        files.push({ path: [...path, entry], bytes: await readFile(target) });
      }
    }
  };
  await walk(dir, []);
  const manifest = files.find((f) => f.path.length === 1 && f.path[0] === 'SKILL.md');
  if (!manifest) throw new Broken('no SKILL.md');
  const frontmatter = readFrontmatter(manifest.bytes);
  if (frontmatter.name !== name)
    throw new Broken(
      `frontmatter name ${JSON.stringify(frontmatter.name)} is not the folder's name ${JSON.stringify(name)}`,
    );
  if (name.length > 64 || !SKILL_NAME.test(name))
    throw new Broken('a name is 1-64 lowercase letters, digits and single hyphens');
  const out: SkillFile[] = files.map(({ path, bytes }) => ({
    uri: skillUri([...prefix, name, ...path]),
    path: path.join('/'),
    bytes,
    size: bytes.length,
    digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
  }));
  return {
    name,
    uri: skillUri([...prefix, name, 'SKILL.md']),
    root: skillUri([...prefix, name]),
    frontmatter,
    files: out,
  };
}

/** The YAML between a SKILL.md's opening `---` line and the next one, as JSON. */
export function readFrontmatter(bytes: Buffer): JsonObject {
  let text = bytes.toString('utf8').replaceAll('\r\n', '\n');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (!text.startsWith('---\n')) throw new Broken('SKILL.md does not open with YAML frontmatter (a --- line)');
  const close = /^---[ \t]*$/m.exec(text.slice(4));
  if (!close) throw new Broken('the frontmatter has no closing --- line');
  const { parse } = yaml();
  let value: unknown;
  try {
    value = parse(text.slice(4, 4 + close.index), { schema: 'core', uniqueKeys: true, maxAliasCount: 0 });
  } catch (err) {
    throw new Broken(`the frontmatter is not YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isObject(value as JsonValue) || !isJson(value))
    throw new Broken('the frontmatter is not a mapping of JSON values');
  const fm = value as JsonObject;
  if (typeof fm.description !== 'string' || fm.description === '' || [...fm.description].length > 1024)
    throw new Broken('the frontmatter needs a description of 1-1024 characters');
  if (
    fm.metadata !== undefined &&
    !(isObject(fm.metadata) && Object.values(fm.metadata).every((v) => typeof v === 'string'))
  ) {
    throw new Broken('frontmatter metadata must map strings to strings');
  }
  return fm;
}

function isJson(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isJson);
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype)
    return Object.values(v as object).every(isJson);
  return false;
}
