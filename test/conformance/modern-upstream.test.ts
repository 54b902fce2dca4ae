// The official conformance suite against Causeway in front of a server that speaks only
// 2026-07-28 (the modern fixture, refusing the legacy era): at 2026-07-28 Causeway scores what
// the server scores directly (it relays), and at 2025-11-25 every scored scenario passes (it
// serves the legacy protocol itself, the server's input_required rounds put to the suite's
// client as real server->client requests).

import t from 'tap';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { formatFailures, passingScenarios, runConformance, scoredScenarios } from '../helpers/conformance.js';

// Three servers, so the three runs go side by side without one's list changes reaching another's
// listen streams: one run straight at a server, one through Causeway at each revision.
const [direct, upstream, upstream25] = await Promise.all([
  startModernServer(),
  startModernServer(),
  startModernServer(),
]);
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
const causeway25 = await startCauseway({ 'upstream.url': upstream25.url, 'log.level': 'warn' });
t.teardown(async () => {
  await Promise.all([causeway.close(), causeway25.close()]);
  await Promise.all([direct.close(), upstream.close(), upstream25.close()]);
});

const runs = {
  direct: runConformance({ t, url: direct.url, requirements: '2026-07-28' }),
  proxied: runConformance({ t, url: causeway.url!, requirements: '2026-07-28' }),
  proxied25: runConformance({ t, url: causeway25.url!, requirements: '2025-11-25' }),
};

const scored = scoredScenarios;
const passing = passingScenarios;

t.test('2026-07-28 through Causeway scores what the 2026 server scores directly', async (t) => {
  const [straight, proxied] = await Promise.all([runs.direct, runs.proxied]);
  t.notOk(proxied.timedOut, 'suite finished');
  t.ok(scored(straight).length >= 37, `the 2026-07-28 set ran (${scored(straight).length})`);
  t.equal(
    passing(proxied).length,
    passing(straight).length,
    `${passing(proxied).length}/${scored(proxied).length} ` + `through Causeway, ${passing(straight).length} directly`,
  );
  t.equal(passing(proxied).length, scored(proxied).length, 'every scored scenario passes');
  if (passing(proxied).length !== scored(proxied).length) t.comment(formatFailures(proxied));
  t.equal(proxied.exitCode, 0);
});

t.test('2025-11-25 through Causeway in front of the 2026-only server: every scored scenario passes', async (t) => {
  const proxied = await runs.proxied25;
  t.notOk(proxied.timedOut, 'suite finished');
  t.ok(scored(proxied).length >= 30, `the 2025-11-25 set ran (${scored(proxied).length})`);
  t.equal(
    passing(proxied).length,
    scored(proxied).length,
    `${passing(proxied).length}/${scored(proxied).length}\n${formatFailures(proxied)}`,
  );
  t.equal(proxied.exitCode, 0);
});
