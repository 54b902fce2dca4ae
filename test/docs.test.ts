// The README cannot drift from the code: every setting and every error reason has its row,
// and no row names something that no longer exists.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SETTINGS } from '../src/config/schema.js';
import { envName } from '../src/config/load.js';
import { ERROR_TABLE, pinnedStatus } from '../src/errors.js';

const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
const rows = (prefix: RegExp) => [...readme.matchAll(prefix)].map((m) => m[1]!);

t.test('every setting is documented with its env variable and default', async (t) => {
  for (const s of SETTINGS) {
    const row = readme.split('\n').find((l) => l.startsWith(`| \`${s.path}\` |`));
    t.ok(row, `${s.path} has a row`);
    t.match(row ?? '', `\`${envName(s.path)}\``, `${s.path} names its variable`);
    t.match(row ?? '', `\`${JSON.stringify(s.default)}\``, `${s.path} states its default`);
  }
  const documented = rows(/^\| `([a-z]+\.[A-Za-z]+)` \|/gm);
  t.same(
    documented.filter((p) => !SETTINGS.some((s) => s.path === p)),
    [],
    'no stale setting rows',
  );
});

t.test('every error reason is documented with its status and code', async (t) => {
  for (const [reason, row] of Object.entries(ERROR_TABLE)) {
    const line = readme.split('\n').find((l) => l.startsWith(`| \`${reason}\` |`));
    t.ok(line, `${reason} has a row`);
    t.match(line ?? '', `| ${row.status} | ${row.code} |`, `${reason} status and code`);
  }
  const documented = rows(/^\| `([a-z_]+)` \| \d{3} \|/gm);
  t.same(
    documented.filter((r) => !(r in ERROR_TABLE)),
    [],
    'no stale error rows',
  );
});

t.test("Causeway's own errors answer with the status 2026 pins to their code", async (t) => {
  for (const [reason, row] of Object.entries(ERROR_TABLE)) {
    const pinned = pinnedStatus(row.code);
    if (pinned !== undefined) t.equal(row.status, pinned, `${reason}: ${row.code} is HTTP ${pinned}`);
  }
  t.equal(pinnedStatus(-32603), undefined, 'unpinned codes have no status of their own');
});

t.test('the Install section names the package, its tarball and the image base the repo really has', async (t) => {
  const root = (p: string) => readFileSync(fileURLToPath(new URL(`../../${p}`, import.meta.url)), 'utf8');
  const pkg = JSON.parse(root('package.json')) as { name: string; version: string };
  const base = /^ARG NODE_IMAGE=(\S+)$/m.exec(root('Dockerfile'))?.[1];
  t.ok(base, 'the Dockerfile names its base image');
  t.match(readme, `npm name \`${pkg.name}\``);
  t.match(readme, `./${pkg.name}-${pkg.version}.tgz`);
  t.match(readme, `\`${base}\``);
});
