// Names for what callgrind counted in a Node process. V8's builtins and runtime are named in the
// node binary; JavaScript compiled at run time is not, so callgrind lists it by address. Node
// started with --perf-basic-prof writes /tmp/perf-<pid>.map (start, size, name of each piece of
// code it makes), and an address inside one of those ranges is that function's. The result: each
// function's own instructions (not those of what it calls), by name, per call.

import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { FunctionCount } from './types.js';

const exec = promisify(execFile);

interface CodeRange {
  start: number;
  end: number;
  name: string;
}

/** The perf map's ranges, by start; a later entry for the same start (code made again) wins. */
export function parsePerfMap(text: string): CodeRange[] {
  const byStart = new Map<number, CodeRange>();
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.+)$/.exec(line);
    if (!m) continue;
    const start = Number.parseInt(m[1]!, 16);
    byStart.set(start, { start, end: start + Number.parseInt(m[2]!, 16), name: m[3]! });
  }
  return [...byStart.values()].sort((a, b) => a.start - b.start);
}

/** The range holding `address`, or undefined (binary search, then back over overlapping ranges). */
export function codeAt(ranges: readonly CodeRange[], address: number): CodeRange | undefined {
  let lo = 0;
  let hi = ranges.length - 1;
  let at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid]!.start <= address) {
      at = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  for (let i = at; i >= 0 && i > at - 50; i--) if (address < ranges[i]!.end) return ranges[i];
  return undefined;
}

/**
 * A function as a reader knows it: `legacyParams src/upstream/http/call.js:18` for JavaScript
 * (`*` optimized, `~` interpreted, `^` baseline are V8's tiers, dropped), a builtin or a C++
 * function without its parameters.
 */
export function shortName(name: string): string {
  const js = /^JS:[*~^+]?(\S*) (\S+?):(\d+):\d+$/.exec(name);
  if (js) {
    const file = js[2]!
      .replace(/^file:\/\//, '')
      .replace(/^.*?\/(dist|node_modules)\//, (_, d) => (d === 'dist' ? '' : 'node_modules/'));
    return `${js[1] || '(anonymous)'} ${file}:${js[3]}`;
  }
  if (name.startsWith('RegExp:')) return name;
  let cpp = name
    .replace(/^\?\?\?:/, '')
    .replace(/ \[[^\]]*\]$/, '')
    .replace(/^\.\/[^:]*:/, '');
  // C++: no parameters, no template arguments, no return type.
  const params = cpp.indexOf('(');
  if (params > 0) cpp = cpp.slice(0, params);
  for (let was = ''; was !== cpp; ) {
    was = cpp;
    cpp = cpp.replace(/<[^<>]*>/g, '');
  }
  return cpp.slice(cpp.lastIndexOf(' ') + 1);
}

/**
 * The main thread's functions by their own instructions per call, most first: `top` of them. The
 * perf map is removed once read.
 */
export async function functionsByName(
  dump: string,
  perfMap: string,
  calls: number,
  top: number,
): Promise<FunctionCount[]> {
  const [{ stdout }, map] = await Promise.all([
    exec('callgrind_annotate', ['--inclusive=no', '--threshold=100', dump], { maxBuffer: 256 * 2 ** 20 }),
    readFile(perfMap, 'utf8'),
  ]);
  await rm(perfMap, { force: true });
  const ranges = parsePerfMap(map);
  const totals = new Map<string, number>();
  for (const line of stdout.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.+)$/.exec(line);
    if (!m || m[2]!.startsWith('PROGRAM TOTALS')) continue;
    const count = Number(m[1]!.replace(/,/g, ''));
    const address = /^\?\?\?:0x([0-9a-f]+)/.exec(m[2]!);
    const code = address ? codeAt(ranges, Number.parseInt(address[1]!, 16)) : undefined;
    const name = address ? (code ? shortName(code.name) : '(code not in the perf map)') : shortName(m[2]!);
    totals.set(name, (totals.get(name) ?? 0) + count);
  }
  return [...totals]
    .map(([name, n]) => ({ name, perCall: n / calls }))
    .sort((a, b) => b.perCall - a.perCall)
    .slice(0, top);
}
