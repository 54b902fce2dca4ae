// deploy/grafana-dashboard.json is valid JSON whose queries name only metrics Causeway exports
// (its own, or prom-client's default Node metrics), and every Causeway metric has a panel.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createMetrics } from '../../src/metrics/index.js';

const file = fileURLToPath(new URL('../../../deploy/grafana-dashboard.json', import.meta.url));

async function exported(): Promise<{ series: Set<string>; causeway: string[] }> {
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
  const series = new Set<string>();
  const causeway: string[] = [];
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    series.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) series.add(m.name + s);
    if (m.name.startsWith('causeway_')) causeway.push(m.name);
  }
  return { series, causeway };
}

/** Every string under a key named `expr` (panel targets) or `query` / `definition` (variables). */
function queries(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) queries(n, out);
  else if (typeof node === 'object' && node !== null) {
    for (const [k, v] of Object.entries(node)) {
      if (typeof v === 'string' && (k === 'expr' || (k === 'definition' && v.startsWith('label_values')))) out.push(v);
      else queries(v, out);
    }
  }
  return out;
}

/** Metric names in a PromQL expression: selectors (`name{` / `name[`) and label_values(name, ...). */
function metricNames(expr: string): string[] {
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const names = [...bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{[]/g)].map((m) => m[1]!);
  names.push(...[...bare.matchAll(/label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)/g)].map((m) => m[1]!));
  names.push(...[...bare.matchAll(/\b(?:causeway|process|nodejs)_[a-z0-9_]+/g)].map((m) => m[0]));
  return names;
}

t.test('the dashboard parses and queries only exported metrics', async (t) => {
  const dashboard = JSON.parse(readFileSync(file, 'utf8')) as {
    panels: { type: string; targets?: { expr: string }[] }[];
  };
  const { series, causeway } = await exported();
  const exprs = queries(dashboard);
  t.ok(exprs.length >= 20, `${exprs.length} queries`);
  const used = new Set<string>();
  for (const expr of exprs) {
    const names = metricNames(expr);
    t.ok(names.length > 0, `names a metric: ${expr}`);
    for (const n of names) {
      t.ok(series.has(n), `${n} is exported`);
      used.add(n.replace(/_(bucket|sum|count)$/, ''));
    }
  }
  for (const p of dashboard.panels) if (p.type !== 'row') t.ok(p.targets?.length, 'every panel has a query');
  for (const name of causeway) t.ok(used.has(name), `${name} has a panel`);
});
