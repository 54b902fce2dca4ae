// The skills folder as a Kubernetes ConfigMap volume lays it out (files behind `..data`, a
// symlink swapped in one rename on every update), a symlink that stays inside followed, and the
// limits: loaded, watched and reloaded with real files and fs.watch.

import t from 'tap';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SkillFolder } from '../../src/skills/folder.js';
import { loadCatalog, MAX_SKILL_BYTES } from '../../src/skills/load.js';
import { createLogger } from '../../src/log.js';
import { until } from '../helpers/until.js';

const skillMd = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\nBody.\n`;

t.test('a ConfigMap volume: followed through ..data, and an update swapped in is served', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'causeway-cm-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // What the kubelet writes: a timestamped folder, ..data pointing at it, each item's top folder a symlink through
  // ..data.
  const version = async (stamp: string, description: string) => {
    await mkdir(join(dir, stamp, 'triage', 'references'), { recursive: true });
    await writeFile(join(dir, stamp, 'triage', 'SKILL.md'), skillMd('triage', description));
    await writeFile(join(dir, stamp, 'triage', 'references', 'p.md'), 'P1\n');
  };
  await version('..2026_12_04_1', 'first');
  await symlink('..2026_12_04_1', join(dir, '..data'));
  await symlink('..data/triage', join(dir, 'triage'));
  const folder = new SkillFolder([{ dir, prefix: '' }], createLogger('silent'));
  t.teardown(() => folder.close());
  await folder.start();
  const first = folder.current.skills.get('skill://triage/SKILL.md');
  t.equal(first?.frontmatter.description, 'first', 'the skill behind ..data');
  t.same(
    first?.files.map((f) => f.path),
    ['SKILL.md', 'references/p.md'],
  );
  t.same(folder.current.problems, [], 'the ..-names are not skills');
  // The update: a new timestamped folder, then ..data replaced by one rename.
  await version('..2026_12_04_2', 'second');
  await symlink('..2026_12_04_2', join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  await until(() => folder.current.skills.get('skill://triage/SKILL.md')?.frontmatter.description === 'second', {
    what: 'the swapped-in version',
  });
});

t.test('symlinks: inside the folder followed, outside not; a loop walked once', async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'causeway-links-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const dir = join(base, 'skills');
  await mkdir(join(dir, 'shared'), { recursive: true });
  await mkdir(join(dir, 'one'), { recursive: true });
  await writeFile(join(dir, 'shared', 'common.md'), 'common\n');
  await writeFile(join(dir, 'one', 'SKILL.md'), skillMd('one', 'uses shared files'));
  await symlink(join(dir, 'shared', 'common.md'), join(dir, 'one', 'common.md'));
  await symlink(join(dir, 'one'), join(dir, 'one', 'loop'));
  await writeFile(join(base, 'secret'), 'secret\n');
  await symlink(join(base, 'secret'), join(dir, 'one', 'secret'));
  const catalog = await loadCatalog([{ dir, prefix: 'p' }]);
  t.same(
    catalog.skills.get('skill://p/one/SKILL.md')?.files.map((f) => f.path),
    ['SKILL.md', 'common.md'],
  );
  t.match(catalog.problems.join('\n'), 'skill p/shared: no SKILL.md', 'a folder without SKILL.md is named');
});

t.test('limits and frontmatter rules: each broken skill named, the rest served', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'causeway-limits-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const put = async (path: string, content: string | Buffer) => {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  };
  await put('big/SKILL.md', skillMd('big', 'too big'));
  await put('big/blob.bin', Buffer.alloc(MAX_SKILL_BYTES));
  await put('Upper/SKILL.md', skillMd('Upper', 'bad name'));
  await put('nodesc/SKILL.md', '---\nname: nodesc\n---\n');
  await put('aliases/SKILL.md', '---\nname: aliases\ndescription: &d x\nother: *d\n---\n');
  await put('meta/SKILL.md', '---\nname: meta\ndescription: x\nmetadata:\n  n: 1\n---\n');
  await put('unclosed/SKILL.md', '---\nname: unclosed\ndescription: x\n');
  await put('good/SKILL.md', skillMd('good', 'fine'));
  const catalog = await loadCatalog([{ dir, prefix: '' }]);
  t.same([...catalog.skills.keys()], ['skill://good/SKILL.md']);
  const said = catalog.problems.join('\n');
  for (const name of [
    'big: more than',
    'Upper: a name is',
    'nodesc: the frontmatter needs a description',
    'aliases: the frontmatter is not YAML',
    'meta: frontmatter metadata',
    'unclosed: the frontmatter has no closing',
  ]) {
    t.match(said, `skill ${name}`);
  }
  const missing = await loadCatalog([{ dir: join(dir, 'nope'), prefix: '' }]);
  t.match(missing.problems.join('\n'), 'cannot be read (ENOENT)', 'a missing folder is a problem, not a crash');
});
