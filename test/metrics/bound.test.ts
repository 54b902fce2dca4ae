// Bound children (src/metrics/bound.ts) add to prom-client's own series values: a scrape reads
// exactly what prom-client's own children would have recorded, through resets and removals.

import t from 'tap';
import { Counter, Histogram, Registry } from 'prom-client';
import { boundCounter, boundHistogram } from '../../src/metrics/index.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];

function twins() {
  const make = () => {
    const registry = new Registry();
    const counter = new Counter({ name: 'c_total', help: 'c', labelNames: ['a', 'b'] as const, registers: [registry] });
    const histogram = new Histogram({
      name: 'h_seconds',
      help: 'h',
      labelNames: ['a'] as const,
      buckets: BUCKETS,
      registers: [registry],
    });
    return { registry, counter, histogram };
  };
  return { bound: make(), plain: make() };
}

t.test("what a scrape reads is what prom-client's own children record", async (t) => {
  const { bound, plain } = twins();
  const bc = boundCounter(bound.counter, ['x', 'y']);
  const bc2 = boundCounter(bound.counter, ['x', 'z']);
  const bh = boundHistogram(bound.histogram, ['x']);
  const pc = plain.counter.labels('x', 'y');
  const pc2 = plain.counter.labels('x', 'z');
  const ph = plain.histogram.labels('x');
  const values = [0.0005, 0.001, 0.002, 0.05, 0.5, 3, 0, 0.01];
  for (const [i, v] of values.entries()) {
    bc.inc();
    pc.inc();
    if (i % 2 === 0) {
      bc2.inc(2.5);
      pc2.inc(2.5);
    }
    bh.observe(v);
    ph.observe(v);
  }
  t.equal(await bound.registry.metrics(), await plain.registry.metrics());
  t.match(await bound.registry.metrics(), /c_total\{a="x",b="y"\} 8/);
  t.match(await bound.registry.metrics(), /h_seconds_bucket\{le="0.001",a="x"\} 3/);
  t.match(await bound.registry.metrics(), /h_seconds_count\{a="x"\} 8/);
});

t.test('a reset metric and a removed series are found again', async (t) => {
  const { bound, plain } = twins();
  const bc = boundCounter(bound.counter, ['x', 'y']);
  const bh = boundHistogram(bound.histogram, ['x']);
  const pc = plain.counter.labels('x', 'y');
  const ph = plain.histogram.labels('x');
  for (const c of [bc, pc]) c.inc(3);
  for (const h of [bh, ph]) h.observe(0.2);
  bound.counter.reset();
  plain.counter.reset();
  bound.histogram.remove('x');
  plain.histogram.remove('x');
  for (const c of [bc, pc]) c.inc();
  for (const h of [bh, ph]) h.observe(0.02);
  t.equal(await bound.registry.metrics(), await plain.registry.metrics());
  t.match(await bound.registry.metrics(), /c_total\{a="x",b="y"\} 1\n/);
  t.match(await bound.registry.metrics(), /h_seconds_count\{a="x"\} 1\n/);
});

t.test('a negative or non-finite value is refused as prom-client refuses it', async (t) => {
  const { bound } = twins();
  const bc = boundCounter(bound.counter, ['x', 'y']);
  bc.inc();
  t.throws(() => bc.inc(-1));
  const bh = boundHistogram(bound.histogram, ['x']);
  bh.observe(0.1);
  t.throws(() => bh.observe(Number.NaN));
});
