// One snapshot of a mount's skills, immutable: the entries skills/list and skills/get answer
// with [SKILLS "Skill Entries"], each file by its URI with its bytes, digest and size, and every
// directory (the prefix levels, each skill's root and its subfolders) with its direct children
// [SKILLS "Directory Resources"]. A change on disk makes a new Catalog; requests in flight keep
// the one they started with, so an entry and the bytes read with it always agree.

import type { JsonObject } from '../jsonrpc.js';
import { SKILL_SCHEME } from './uri.js';

export interface SkillFile {
  uri: string;
  /** '/'-separated path within the skill. */
  path: string;
  bytes: Buffer;
  size: number;
  /** `sha256:` and the lowercase hex SHA-256 of `bytes`. */
  digest: string;
}

export interface SkillEntry {
  name: string;
  /** The SKILL.md URI. */
  uri: string;
  /** The skill's root directory URI, no trailing slash. */
  root: string;
  frontmatter: JsonObject;
  /** Every file, SKILL.md included, by path. */
  files: SkillFile[];
}

/** A direct child of a directory resource: a file or a subdirectory. */
export interface DirChild {
  uri: string;
  name: string;
  directory: boolean;
}

export const DIRECTORY_MIME_TYPE = 'inode/directory';

export class Catalog {
  /** Skills by SKILL.md URI, in URI order. */
  readonly skills: ReadonlyMap<string, SkillEntry>;
  /** Every file of every skill, in URI order. */
  readonly files: ReadonlyMap<string, { file: SkillFile; skill: SkillEntry }>;
  /** Directory URI -> its direct children, in name order. */
  readonly dirs: ReadonlyMap<string, DirChild[]>;
  /** The skills in URI order, and each one's entry as skills/list and skills/get answer it, made once. */
  readonly list: readonly SkillEntry[];
  readonly entries: ReadonlyMap<string, JsonObject>;
  /** Every file in URI order, for paging resources/list. */
  readonly fileList: ReadonlyArray<{ file: SkillFile; skill: SkillEntry }>;

  constructor(
    skills: readonly SkillEntry[],
    /** Skills left out, and why, one line each. */
    readonly problems: readonly string[],
  ) {
    const sorted = [...skills].sort((a, b) => compare(a.uri, b.uri));
    this.skills = new Map(sorted.map((s) => [s.uri, s]));
    const files = new Map<string, { file: SkillFile; skill: SkillEntry }>();
    const dirs = new Map<string, Map<string, DirChild>>();
    for (const skill of sorted) {
      for (const file of skill.files) {
        files.set(file.uri, { file, skill });
        // Every ancestor down to the authority is a directory holding the next level down.
        let child: DirChild = { uri: file.uri, name: lastSegment(file.uri), directory: false };
        for (let at = child.uri.lastIndexOf('/'); at >= SKILL_SCHEME.length; at = child.uri.lastIndexOf('/')) {
          const dir = child.uri.slice(0, at);
          let children = dirs.get(dir);
          if (!children) dirs.set(dir, (children = new Map()));
          children.set(child.uri, child);
          child = { uri: dir, name: lastSegment(dir), directory: true };
        }
      }
    }
    this.files = new Map([...files].sort(([a], [b]) => compare(a, b)));
    this.dirs = new Map([...dirs].map(([d, c]) => [d, [...c.values()].sort((a, b) => compare(a.uri, b.uri))]));
    this.list = sorted;
    this.entries = new Map(sorted.map((s) => [s.uri, entryOf(s)]));
    this.fileList = [...this.files.values()];
  }
}

/** The entry skills/list and skills/get answer with [SKILLS "Skill Entries"]. */
function entryOf(skill: SkillEntry): JsonObject {
  return {
    uri: skill.uri,
    frontmatter: skill.frontmatter,
    resources: skill.files.map((f) => ({ uri: f.uri, digest: f.digest, size: f.size })),
  };
}

function lastSegment(uri: string): string {
  return decodeURIComponent(uri.slice(Math.max(uri.lastIndexOf('/') + 1, SKILL_SCHEME.length)));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
