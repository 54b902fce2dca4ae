// The official conformance suite against Causeway in front of the legacy fixture: at 2026-07-28
// every scored scenario passes but those listed in the expected-failures file (work still to
// come); at 2025-11-25 Causeway scores what the fixture scores directly.

import t from 'tap';
import { fileURLToPath } from 'node:url';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { formatFailures, runConformance } from '../helpers/conformance.js';

const EXPECTED_2026 = fileURLToPath(
  new URL('../../../test/conformance/expected-failures-2026-07-28.yaml', import.meta.url),
);

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

t.test('2026-07-28 through Causeway: only the expected failures', async (t) => {
  const report = await runConformance({
    t,
    url: causeway.url,
    requirements: '2026-07-28',
    expectedFailuresFile: EXPECTED_2026,
  });
  t.notOk(report.timedOut, 'suite finished');
  t.same(report.baseline?.unexpected ?? [], [], `no unexpected failures\n${formatFailures(report)}`);
  t.same(report.baseline?.stale ?? [], [], 'no stale expected failures');
  t.equal(report.exitCode, 0, 'suite exit code');
  const scored = report.scenarios.filter((s) => s.scored === true);
  t.ok(scored.length >= 37, `all scored scenarios ran (${scored.length})`);
  const passing = scored.filter((s) => s.checks.every((c) => c.status !== 'FAILURE' && c.status !== 'WARNING'));
  t.ok(passing.length >= 20, `${passing.length} scored scenarios fully pass`);
});

t.test('2026-07-28 unscored header scenarios pass too', async (t) => {
  for (const scenario of ['http-header-validation', 'http-custom-header-server-validation']) {
    const report = await runConformance({ t, url: causeway.url, requirements: '2026-07-28', scenario, force: true });
    const bad = report.scenarios
      .flatMap((s) => s.checks)
      .filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    t.same(
      bad.map((c) => `${c.id}: ${c.message ?? ''}`),
      [],
      `${scenario} has no failures`,
    );
    t.ok(report.counts.SUCCESS > 0, `${scenario} ran checks`);
  }
});

t.test('2025-11-25 through Causeway scores what the fixture scores directly', async (t) => {
  const direct = await runConformance({ t, url: upstream.url, requirements: '2025-11-25' });
  const proxied = await runConformance({ t, url: causeway.url, requirements: '2025-11-25' });
  const score = (r: typeof direct) =>
    Object.fromEntries(
      r.scenarios
        .filter((s) => s.scored === true)
        .map((s) => [s.scenario, s.checks.filter((c) => c.status === 'SUCCESS').length]),
    );
  t.ok(Object.keys(score(direct)).length >= 30, 'the 2025-11-25 set ran');
  t.same(score(proxied), score(direct), `same passing checks per scenario\n${formatFailures(proxied)}`);
  t.equal(proxied.failures.length, direct.failures.length, 'same number of failures');
  t.equal(proxied.exitCode, direct.exitCode);
});
