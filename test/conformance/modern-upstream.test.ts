// The official conformance suite against Causeway in front of a server that speaks only
// 2026-07-28 (the modern fixture, refusing the legacy era): at 2026-07-28 Causeway scores what
// the server scores directly (it relays), and at 2025-11-25 every scored scenario passes (it
// serves the legacy protocol itself, the server's input_required rounds put to the suite's
// client as real server->client requests).

import t from 'tap';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { formatFailures, runConformance, type ConformanceReport } from '../helpers/conformance.js';

const upstream = await startModernServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

const scored = (r: ConformanceReport) => r.scenarios.filter((s) => s.scored === true);
const passing = (r: ConformanceReport) => scored(r).filter((s) => s.checks.every((c) => c.status !== 'FAILURE' && c.status !== 'WARNING'));

t.test('2026-07-28 through Causeway scores what the 2026 server scores directly', async (t) => {
  const direct = await runConformance({ t, url: upstream.url, requirements: '2026-07-28' });
  const proxied = await runConformance({ t, url: causeway.url!, requirements: '2026-07-28' });
  t.notOk(proxied.timedOut, 'suite finished');
  t.ok(scored(direct).length >= 37, `the 2026-07-28 set ran (${scored(direct).length})`);
  t.equal(passing(proxied).length, passing(direct).length, `${passing(proxied).length}/${scored(proxied).length} through Causeway, ${passing(direct).length} directly`);
  t.equal(passing(proxied).length, scored(proxied).length, 'every scored scenario passes');
  if (passing(proxied).length !== scored(proxied).length) t.comment(formatFailures(proxied));
  t.equal(proxied.exitCode, 0);
});

t.test('2025-11-25 through Causeway in front of the 2026-only server: every scored scenario passes', async (t) => {
  const proxied = await runConformance({ t, url: causeway.url!, requirements: '2025-11-25' });
  t.notOk(proxied.timedOut, 'suite finished');
  t.ok(scored(proxied).length >= 30, `the 2025-11-25 set ran (${scored(proxied).length})`);
  t.equal(passing(proxied).length, scored(proxied).length, `${passing(proxied).length}/${scored(proxied).length}\n${formatFailures(proxied)}`);
  t.equal(proxied.exitCode, 0);
});
