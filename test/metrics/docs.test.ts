// The README's Metrics table lists every Causeway metric, and nothing that is gone.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createMetrics } from '../../src/metrics/index.js';

const readme = readFileSync(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8');

t.test('every metric has its README row', async (t) => {
  const metrics = createMetrics({
    pendingCalls: () => 0,
    listenStreams: () => 0,
    tasksFollowed: () => 0,
    federationConflicts: () => [['/all', 0]],
    openConnections: () => 0,
    inFlight: () => 0,
    pooledSessions: () => [['default', 0]],
    storeUp: () => true,
    cacheBytes: () => [],
  });
  const names = (await metrics.registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => n.startsWith('causeway_'));
  const rows = [...readme.matchAll(/^\| `(causeway_[a-z_]+)` \|/gm)].map((m) => m[1]!);
  for (const n of names) t.ok(rows.includes(n), `${n} is documented`);
  t.same(
    rows.filter((r) => !names.includes(r)),
    [],
    'no stale metric rows',
  );
});
