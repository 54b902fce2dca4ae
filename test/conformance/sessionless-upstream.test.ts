// The scored 2026-07-28 conformance scenarios through Causeway in front of the session-less
// variant of the legacy fixture (one server per POST, no Mcp-Session-Id). Every scenario that
// asks the client nothing passes; the multi-round ones cannot (an answer never reaches a
// session-less server) and are listed in expected-failures-sessionless-2026-07-28.yaml. They
// must fail at once with upstream_sessionless: upstream.requestTimeoutMs is 60 s here, longer
// than the suite's own per-request wait, so a call left waiting would time the suite out.

import t from 'tap';
import { fileURLToPath } from 'node:url';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { formatFailures, runConformance } from '../helpers/conformance.js';

const EXPECTED = fileURLToPath(
  new URL('../../../test/conformance/expected-failures-sessionless-2026-07-28.yaml', import.meta.url),
);

const upstream = await startLegacyServer({ stateless: true });
const causeway = await startCauseway({
  'upstream.url': upstream.url,
  'upstream.requestTimeoutMs': 60_000,
  'log.level': 'warn',
});
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

t.test('2026-07-28 through Causeway to a session-less upstream: only the multi-round scenarios fail', async (t) => {
  const report = await runConformance({
    t,
    url: causeway.url,
    requirements: '2026-07-28',
    expectedFailuresFile: EXPECTED,
  });
  t.notOk(report.timedOut, 'suite finished');
  t.same(report.baseline?.unexpected ?? [], [], `no unexpected failures\n${formatFailures(report)}`);
  t.same(report.baseline?.stale ?? [], [], 'no stale expected failures');
  const scored = report.scenarios.filter((s) => s.scored === true);
  t.ok(scored.length >= 37, `all scored scenarios ran (${scored.length})`);
});
