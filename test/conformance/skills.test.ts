// The official conformance suite's Skills extension scenarios (SEP-2640: enumeration, skills/get,
// the SKILL.md manifest, directory reads) against Causeway serving a skills folder in front of
// the legacy fixture, which has no skills of its own.

import t from 'tap';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { runConformance } from '../helpers/conformance.js';

const dir = await mkdtemp(join(tmpdir(), 'causeway-skills-conformance-'));
const files: Record<string, string> = {
  'pdf-processing/SKILL.md':
    '---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  ' +
    'version: "2.1.0"\n---\n\nChoose the matching template from `templates/`.\n',
  'pdf-processing/templates/invoice.md': '# Invoice\n',
  'pdf-processing/templates/regional/eu-invoice.md': '# EU invoice\n',
  'git-workflow/SKILL.md':
    "---\nname: git-workflow\ndescription: Follow this team's Git " +
    'conventions\n---\n\nBranch, commit, rebase; see references/.\n',
  'git-workflow/references/GUIDE.md': '# Guide\n',
};
for (const [path, text] of Object.entries(files)) {
  await mkdir(join(dir, path, '..'), { recursive: true });
  await writeFile(join(dir, path), text);
}
const upstream = await startLegacyServer();
const causeway = await startCauseway({
  'upstream.url': upstream.url,
  'skills.dir': dir,
  'skills.prefix': 'acme',
  'log.level': 'warn',
});
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
  await rm(dir, { recursive: true, force: true });
});

for (const scenario of ['sep-2640-skills-enumeration', 'sep-2640-skills-directory', 'sep-2640-skills-manifest']) {
  t.test(`${scenario} at 2026-07-28 through Causeway`, async (t) => {
    const report = await runConformance({ t, url: causeway.url, requirements: '2026-07-28', scenario, force: true });
    const checks = report.scenarios.flatMap((s) => s.checks);
    const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING' || c.status === 'SKIPPED');
    t.same(
      bad.map((c) => `${c.status} ${c.id}: ${c.message ?? ''}`),
      [],
      'every check passes, none skipped',
    );
    t.ok(report.counts.SUCCESS >= 5, `${scenario} ran checks (${report.counts.SUCCESS} passed)`);
  });
}
