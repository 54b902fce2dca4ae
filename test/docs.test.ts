// The README cannot drift from the code: every setting and every error reason has its row,
// and no row names something that no longer exists.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SETTINGS } from '../src/config/schema.js';
import { envName } from '../src/config/load.js';
import { ERROR_TABLE } from '../src/errors.js';

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
  t.same(documented.filter((p) => !SETTINGS.some((s) => s.path === p)), [], 'no stale setting rows');
});

t.test('every error reason is documented with its status and code', async (t) => {
  for (const [reason, row] of Object.entries(ERROR_TABLE)) {
    const line = readme.split('\n').find((l) => l.startsWith(`| \`${reason}\` |`));
    t.ok(line, `${reason} has a row`);
    t.match(line ?? '', `| ${row.status} | ${row.code} |`, `${reason} status and code`);
  }
  const documented = rows(/^\| `([a-z_]+)` \| \d{3} \|/gm);
  t.same(documented.filter((r) => !(r in ERROR_TABLE)), [], 'no stale error rows');
});
