// Children bound for good. prom-client's labelled child takes its label values again on every
// call: it builds a label object, checks it and hashes it to find the series' value, several
// allocations per request on the hot metrics. A bound child finds that value once (the first call
// goes through prom-client's own API, which creates it) and from then on adds to it in place, as
// prom-client itself would. The value is looked up again only if the metric was reset or the
// series removed, and a metric whose inner shape is not the one expected keeps prom-client's own
// child, so what a scrape reads is prom-client's in every case.

import type { Counter, Histogram } from 'prom-client';

export interface CounterChild {
  inc(value?: number): void;
}

export interface HistogramChild {
  observe(value: number): void;
}

type Labels = Record<string, string | number>;

/** prom-client's own fields behind a metric, as the version in use has them. */
interface Inner<V> {
  hashMap?: Record<string, V>;
  labelNames?: string[];
  upperBounds?: number[];
  enableExemplars?: boolean;
}

interface CounterValue {
  value: number;
  labels: Labels;
}

interface HistogramValue {
  labels: Labels;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

/** Where a series' value is kept: found by its labels the first time, then by its key. */
class Series<V extends { labels: Labels }> {
  private map: Record<string, V> | undefined;
  private key: string | undefined;
  private value: V | undefined;

  constructor(
    private readonly inner: Inner<V>,
    private readonly labels: Labels,
  ) {}

  /** The value, if it exists and is still the metric's. */
  current(): V | undefined {
    const map = this.inner.hashMap;
    if (map !== undefined && map === this.map && this.key !== undefined && map[this.key] === this.value)
      return this.value;
    return this.find(map);
  }

  private find(map: Record<string, V> | undefined): V | undefined {
    this.map = map;
    this.key = undefined;
    this.value = undefined;
    if (map === undefined) return undefined;
    for (const key in map) {
      const v = map[key]!;
      if (sameLabels(v.labels, this.labels)) {
        this.key = key;
        this.value = v;
        return v;
      }
    }
    return undefined;
  }
}

function sameLabels(a: Labels | undefined, b: Labels): boolean {
  if (a === undefined) return false;
  let n = 0;
  for (const k in a) {
    if (String(a[k]) !== String(b[k])) return false;
    n++;
  }
  return n === Object.keys(b).length;
}

function labelsOf(inner: Inner<unknown>, values: readonly string[]): Labels | undefined {
  const names = inner.labelNames;
  if (!Array.isArray(names) || names.length !== values.length || typeof inner.hashMap !== 'object') return undefined;
  const labels: Labels = {};
  names.forEach((name, i) => (labels[name] = values[i]!));
  return labels;
}

export function boundCounter(metric: Counter<string>, values: readonly string[]): CounterChild {
  const child = metric.labels(...values);
  const inner = metric as unknown as Inner<CounterValue>;
  const labels = labelsOf(inner, values);
  if (labels === undefined) return child;
  const series = new Series(inner, labels);
  return {
    inc(value = 1) {
      const v = series.current();
      // Counters only go up (prom-client throws on a negative value: so does its own child, here).
      if (v === undefined || !(value >= 0) || !Number.isFinite(value)) child.inc(value);
      else v.value += value;
    },
  };
}

export function boundHistogram(metric: Histogram<string>, values: readonly string[]): HistogramChild {
  const child = metric.labels(...values);
  const inner = metric as unknown as Inner<HistogramValue>;
  const labels = labelsOf(inner, values);
  const bounds = inner.upperBounds;
  if (labels === undefined || !Array.isArray(bounds) || inner.enableExemplars === true) return child;
  const series = new Series(inner, labels);
  // The bucket counts are keyed by the bounds as property names: made once, not converted from a
  // number (and looked up through the runtime) at every observation.
  const keys = bounds.map(String);
  return {
    observe(value: number) {
      const v = series.current();
      if (v === undefined || !Number.isFinite(value)) return child.observe(value);
      v.sum += value;
      v.count += 1;
      // The first bucket the value fits: prom-client keeps counts per bucket and sums them when scraped.
      for (let i = 0; i < bounds.length; i++) {
        if (value <= bounds[i]!) {
          const counts = v.bucketValues;
          const n = counts[keys[i]!];
          if (n !== undefined) counts[keys[i]!] = n + 1;
          return;
        }
      }
    },
  };
}
