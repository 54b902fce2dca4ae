// Instructions per warm call, counted by valgrind's callgrind: Causeway and the minimal translator,
// each under the tool, warmed by a number of calls, then counted over a window of small calls at c=16. CPU time per
// call moves by 20-40% on this machine between two processes of one build, and within one process from window to
// window; an instruction count does not (two runs of one build agree within 1-2% once the window holds a few thousand
// calls). Only the main thread is read: it is where a request's work is done; V8's compiler and GC helper threads are
// left out on both sides. A count is not a time (a cache miss costs more than an add), so the CPU targets still read
// the paired run; this is the figure to compare a change by, before and after.

import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CannonJob, CannonResult } from './load-worker.js';
import { probe, requestFor } from './mcp.js';
import { functionsByName } from './callgrind-names.js';
import { findBinary, sleep } from './procs.js';
import { startCauseway, startNodeReference, type Proxy, type Upstream } from './services.js';
import type { InstructionCount, InstructionsResult } from './types.js';

const exec = promisify(execFile);

/**
 * Warm calls before counting: by count, not time (under the tool Causeway serves about 400 a second, the translator
 * 800).
 */
const WARM_CALLS = Number(process.env.BENCH_INSTR_WARM_CALLS ?? 12_000);
const COUNT_MS = Number(process.env.BENCH_INSTR_MS ?? 20_000);
const CONCURRENCY = 16;
/** Functions named in the results, by their own instructions per call. */
const TOP_FUNCTIONS = 40;
/** Node under valgrind starts in seconds, not milliseconds. */
const START_TIMEOUT_MS = 120_000;

interface Deps {
  upstream: Upstream;
  logDir: string;
  run(job: CannonJob): Promise<CannonResult>;
  say(msg: string): void;
}

/** Both counts, or why there are none. */
export async function instructionsRun(deps: Deps): Promise<InstructionsResult | { error: string }> {
  const valgrind = findBinary('valgrind');
  const control = findBinary('callgrind_control');
  if (!valgrind || !control) return { error: 'valgrind (with callgrind_control) not found on PATH' };
  deps.say(`instructions: callgrind on Causeway and the minimal translator, small tools/call, c=${CONCURRENCY}`);
  try {
    const causeway = await count(deps, valgrind, control, 'causeway-memory');
    const translator = await count(deps, valgrind, control, 'node-translator');
    return { concurrency: CONCURRENCY, warmCalls: WARM_CALLS, countMs: COUNT_MS, causeway, translator };
  } catch (err) {
    return { error: (err as Error).message.split('\n')[0]! };
  }
}

async function count(
  deps: Deps,
  valgrind: string,
  control: string,
  path: InstructionCount['path'],
): Promise<InstructionCount> {
  const out = join(deps.logDir, `callgrind-${path}.out`);
  const via = [
    valgrind,
    '--tool=callgrind',
    // Counting starts when told, after the warm-up.
    '--instr-atstart=no',
    // V8 writes and rewrites its code: valgrind must see every change of it.
    '--smc-check=all-non-file',
    '--separate-threads=yes',
    '--dump-instr=no',
    `--callgrind-out-file=${out}`,
  ];
  const launch = { via, startTimeoutMs: START_TIMEOUT_MS };
  // The JavaScript V8 compiles is named in /tmp/perf-<pid>.map (bench/callgrind-names.ts).
  // V8 then writes a log of its heap too, by default in the working directory: the log folder's.
  const named = ['--perf-basic-prof', `--logfile=${join(deps.logDir, `v8-${path}.log`)}`, '--no-logfile-per-isolate'];
  const proxy: Proxy =
    path === 'causeway-memory'
      ? await startCauseway('causeway-callgrind', deps.upstream.url, { 'drain.delayMs': 0 }, deps.logDir, named, launch)
      : await startNodeReference('node-translator', deps.upstream, deps.logDir, launch, named);
  try {
    const target = { era: 'modern' as const, url: proxy.url };
    await probe(target, 'call');
    const job = (durationMs: number): CannonJob => ({
      kind: 'cannon',
      url: target.url,
      spec: requestFor(target, 'call'),
      connections: CONCURRENCY,
      durationMs,
    });
    let warmCalls = 0;
    while (warmCalls < WARM_CALLS) warmCalls += (await deps.run(job(5000))).count;
    const pid = String(proxy.svc.pid);
    await exec(control, ['--instr=on', pid]);
    const r = await deps.run(job(COUNT_MS));
    await exec(control, ['--instr=off', pid]);
    await exec(control, ['--dump', pid]);
    const { total: main, file } = await mainThreadTotal(out);
    if (r.count === 0 || r.errors + r.non2xx > 0)
      throw new Error(`${path}: ${r.count} calls, ${r.errors + r.non2xx} failed, in the counted window`);
    const rec: InstructionCount = { path, warmCalls, calls: r.count, mainThread: main, perCall: main / r.count };
    try {
      rec.functions = await functionsByName(file, `/tmp/perf-${pid}.map`, r.count, TOP_FUNCTIONS);
    } catch (err) {
      deps.say(`  ${path}: no function names (${(err as Error).message.split('\n')[0]})`);
    }
    deps.say(
      `  ${path}: ${(rec.perCall / 1000).toFixed(1)}k instructions per ` +
        `call (${r.count} calls counted after ${warmCalls} warm ones)`,
    );
    return rec;
  } finally {
    await proxy.svc.stop('SIGKILL', 1000);
  }
}

/** The main thread's total and its dump (`<out>.<dump>-01`), once it is written whole. */
async function mainThreadTotal(out: string): Promise<{ total: number; file: string }> {
  const dir = join(out, '..');
  const base = out.slice(dir.length + 1);
  for (let tries = 0; tries < 100; tries++) {
    const file = readdirSync(dir).find((f) => f.startsWith(`${base}.`) && f.endsWith('-01'));
    const m = file === undefined ? null : /^totals: (\d+)$/m.exec(readFileSync(join(dir, file), 'utf8'));
    if (m) return { total: Number(m[1]), file: join(dir, file!) };
    await sleep(100);
  }
  throw new Error(`callgrind wrote no main-thread totals to ${out}.*-01`);
}
