// Summarises a V8 .cpuprofile (node --cpu-prof): where Causeway's busy time went, by component
// (self time) and by function (self and inclusive time).

import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileRow {
  name: string;
  /** Share of busy (non-idle) samples, percent. */
  pct: number;
}

export interface ProfileSummary {
  busySamples: number;
  /** Busy time, ms, as sampled. */
  busyMs: number;
  components: ProfileRow[];
  topSelf: ProfileRow[];
  topInclusive: ProfileRow[];
}

/** Which part of the process a frame belongs to. */
export function componentOf(f: CallFrame): string {
  const url = f.url;
  if (url === '') {
    if (f.functionName === '(garbage collector)') return 'V8 garbage collector';
    if (f.functionName === '(program)') return 'V8 / native (program)';
    return `native: ${f.functionName || '(anonymous)'}`;
  }
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return `dependency: ${nm[1]}`;
  const src = /\/dist\/src\/(.+?)\.js$/.exec(url);
  if (src) return `causeway: src/${src[1]}.ts`;
  if (url.startsWith('node:')) {
    const m = /^node:(?:internal\/)?([^/]+(?:\/[^/]+)?)/.exec(url);
    const mod = m?.[1] ?? url;
    if (/^(_http|http|internal\/http)/.test(mod) || mod.startsWith('http')) return 'node: http';
    if (mod.startsWith('streams') || mod.startsWith('stream')) return 'node: streams';
    if (mod.startsWith('net') || mod.startsWith('stream_base') || mod.startsWith('dns')) return 'node: net';
    if (mod.startsWith('timers') || mod.startsWith('process/task_queues') || mod.startsWith('async_hooks'))
      return 'node: timers / task queues';
    if (mod.startsWith('events') || mod.startsWith('event_target') || mod.startsWith('abort_controller'))
      return 'node: events / AbortController';
    if (mod.startsWith('crypto')) return 'node: crypto';
    return `node: ${mod.split('/')[0]}`;
  }
  return url.replace(/^.*\/(dist\/)/, '$1');
}

function label(f: CallFrame): string {
  const where =
    f.url === '' ? '' : ` ${f.url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/')}:${f.lineNumber + 1}`;
  return `${f.functionName || '(anonymous)'}${where}`;
}

function isIdle(f: CallFrame): boolean {
  return f.url === '' && (f.functionName === '(idle)' || f.functionName === '(root)');
}

/**
 * `window`: only samples taken between these monotonic times (process.hrtime.bigint() / 1000, in
 * microseconds; V8 stamps samples on the same clock), so start-up and shutdown stay out.
 */
export function summariseProfile(file: string, top = 15, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  let samples = p.samples;
  let spanUs = p.endTime - p.startTime;
  if (window) {
    const kept: number[] = [];
    let t = p.startTime;
    for (let i = 0; i < p.samples.length; i++) {
      t += p.timeDeltas[i] ?? 0;
      if (t >= window.fromUs && t <= window.toUs) kept.push(p.samples[i]!);
    }
    if (kept.length > 0) {
      samples = kept;
      spanUs = window.toUs - window.fromUs;
    }
  }
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const hits = new Map<number, number>();
  for (const s of samples) hits.set(s, (hits.get(s) ?? 0) + 1);

  const self = new Map<string, number>();
  const comp = new Map<string, number>();
  const incl = new Map<string, number>();
  let busy = 0;
  for (const [id, count] of hits) {
    const node = byId.get(id);
    if (!node || isIdle(node.callFrame)) continue;
    busy += count;
    const l = label(node.callFrame);
    self.set(l, (self.get(l) ?? 0) + count);
    const c = componentOf(node.callFrame);
    comp.set(c, (comp.get(c) ?? 0) + count);
    // Inclusive: each distinct function on the stack, once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      if (isIdle(f)) continue;
      const fl = label(f);
      if (seen.has(fl)) continue;
      seen.add(fl);
      incl.set(fl, (incl.get(fl) ?? 0) + count);
    }
  }
  const rows = (m: Map<string, number>, n: number): ProfileRow[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, count]) => ({ name, pct: busy === 0 ? 0 : (100 * count) / busy }));
  const avgIntervalMs = samples.length > 0 ? spanUs / 1000 / samples.length : 0;
  return {
    busySamples: busy,
    busyMs: busy * avgIntervalMs,
    components: rows(comp, Number(process.env.PROFILE_COMPONENTS ?? 20)),
    topSelf: rows(self, top),
    topInclusive: rows(new Map([...incl].filter(([k]) => k.includes('dist/src/') || k.includes('node_modules/'))), top),
  };
}
