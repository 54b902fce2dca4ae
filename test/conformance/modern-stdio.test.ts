// The official conformance suite against Causeway in front of the 2026-only fixture run as its
// stdio child (the SDK 2.x stdio transport, legacy refused): at 2026-07-28 Causeway scores what
// the same server scores directly over HTTP, and at 2025-11-25 every scored scenario passes (the
// translated legacy face over the child, its input_required rounds put to the suite's client as
// real requests). Each Causeway has its own child, so one run's list changes stay its own.

import t from 'tap';
import { fileURLToPath } from 'node:url';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { formatFailures, passingScenarios, runConformance, scoredScenarios } from '../helpers/conformance.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/modern-server.js', import.meta.url));
const stdio = {
  'upstream.transport': 'stdio',
  'upstream.command': process.execPath,
  'upstream.args': `${FIXTURE},--stdio`,
  'log.level': 'warn',
};

const direct = await startModernServer();
const [causeway, causeway25] = await Promise.all([startCauseway(stdio), startCauseway(stdio)]);
t.teardown(async () => {
  await Promise.all([causeway.close(), causeway25.close()]);
  await direct.close();
});

const runs = {
  direct: runConformance({ t, url: direct.url, requirements: '2026-07-28' }),
  proxied: runConformance({ t, url: causeway.url!, requirements: '2026-07-28' }),
  proxied25: runConformance({ t, url: causeway25.url!, requirements: '2025-11-25' }),
};

const scored = scoredScenarios;
const passing = passingScenarios;

t.test('2026-07-28 through Causeway to the stdio child scores what the server scores directly over HTTP', async (t) => {
  const [straight, proxied] = await Promise.all([runs.direct, runs.proxied]);
  t.notOk(proxied.timedOut, 'suite finished');
  t.ok(scored(straight).length >= 37, `the 2026-07-28 set ran (${scored(straight).length})`);
  const through = `${passing(proxied).length}/${scored(proxied).length}`;
  const summary = `${through} through Causeway over stdio, ${passing(straight).length} directly`;
  t.equal(passing(proxied).length, passing(straight).length, summary);
  if (passing(proxied).length !== scored(proxied).length) t.comment(formatFailures(proxied));
});

t.test('2025-11-25 through Causeway in front of the 2026-only stdio child: every scored scenario passes', async (t) => {
  const proxied = await runs.proxied25;
  t.notOk(proxied.timedOut, 'suite finished');
  t.ok(scored(proxied).length >= 30, `the 2025-11-25 set ran (${scored(proxied).length})`);
  t.equal(
    passing(proxied).length,
    scored(proxied).length,
    `${passing(proxied).length}/${scored(proxied).length}\n${formatFailures(proxied)}`,
  );
});
