// The official conformance suite at 2026-07-28 through Causeway in front of the legacy fixture
// reached over the other transports: as Causeway's stdio child (StdioServerTransport) and over
// 2024-11-05 HTTP+SSE (SSEServerTransport). Every check of every scored scenario passes, as in
// front of the Streamable HTTP fixture, with one exception on stdio (below). With transport auto,
// Causeway finds HTTP+SSE (at /sse beside the /mcp URL it is given) and Streamable HTTP, and
// scores the same.

import t, { type Test } from 'tap';
import { fileURLToPath } from 'node:url';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway, type Settings } from '../helpers/causeway.js';
import { formatFailures, runConformance } from '../helpers/conformance.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));

/**
 * This check reads the first frames of a call made with a capability set no earlier request
 * used, within 600 ms. On stdio that is a new session, so a new child process (Node start-up and
 * the SDK's import take about that long here): it passes once the session is warm and may fail
 * cold. It may go either way; every other check must pass.
 */
const COLD_CHILD = 'server-stateless:sep-2575-http-server-no-independent-requests-on-stream';

async function scoredThrough(t: Test, settings: Settings, mayFail: readonly string[] = []): Promise<void> {
  const causeway = await startCauseway({ ...settings, 'log.level': 'warn' });
  t.teardown(() => causeway.close());
  const report = await runConformance({ t, url: causeway.url, requirements: '2026-07-28' });
  t.notOk(report.timedOut, 'suite finished');
  const scored = report.scenarios.filter((s) => s.scored === true);
  t.ok(scored.length >= 37, `all scored scenarios ran (${scored.length})`);
  const failed = scored.flatMap((s) =>
    s.checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING').map((c) => `${s.scenario}:${c.id}`),
  );
  for (const f of failed.filter((x) => mayFail.includes(x))) t.comment(`allowed to fail: ${f}`);
  t.same(
    failed.filter((x) => !mayFail.includes(x)),
    [],
    `no scored check fails\n${formatFailures(report)}`,
  );
}

t.test('2026-07-28 through Causeway to a stdio upstream', async (t) => {
  await scoredThrough(
    t,
    { 'upstream.transport': 'stdio', 'upstream.command': process.execPath, 'upstream.args': `${FIXTURE},--stdio` },
    [COLD_CHILD],
  );
});

t.test('2026-07-28 through Causeway to an HTTP+SSE upstream', async (t) => {
  const upstream = await startLegacyServer({ transport: 'sse' });
  t.teardown(() => upstream.close());
  await scoredThrough(t, { 'upstream.transport': 'sse', 'upstream.url': upstream.url });
});

t.test('2026-07-28 through Causeway to an auto upstream that is HTTP+SSE', async (t) => {
  const upstream = await startLegacyServer({ transport: 'sse' });
  t.teardown(() => upstream.close());
  await scoredThrough(t, { 'upstream.transport': 'auto', 'upstream.url': upstream.url.replace(/\/sse$/, '/mcp') });
  t.ok(upstream.stats().getStreamsOpened > 1, 'served over HTTP+SSE streams');
});

t.test('2026-07-28 through Causeway to an auto upstream that is Streamable HTTP', async (t) => {
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  await scoredThrough(t, { 'upstream.transport': 'auto', 'upstream.url': upstream.url });
  t.ok(upstream.stats().initializeCount > 1, 'served over Streamable HTTP');
});
