// Processes the bench starts (upstreams, Causeway, nginx, redis-server, the load worker) and
// what it reads about them from /proc: CPU time, resident and peak memory.

import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, openSync, readFileSync, writeFileSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

const started = new Set<ChildProcess>();

/** Every process the bench started is killed when it exits, however it exits. */
export function killAll(): void {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}
process.once('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    killAll();
    process.exit(130);
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface Service {
  child: ChildProcess;
  pid: number;
  /** The command line, for the report. */
  command: string;
  logFile: string;
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

function quote(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** Spawns a process with its stdout and stderr going to a log file (so nothing in the bench has to drain them). */
export function startProcess(cmd: string, args: string[], logFile: string, opts: SpawnOptions = {}): Service {
  const fd = openSync(logFile, 'a');
  const child = spawn(cmd, args, { stdio: ['ignore', fd, fd], ...opts });
  closeSync(fd);
  started.add(child);
  child.once('exit', () => started.delete(child));
  const stop = (signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill(signal);
    });
  if (child.pid === undefined) throw new Error(`could not start ${cmd}`);
  return { child, pid: child.pid, command: [cmd, ...args].map(quote).join(' '), logFile, stop };
}

/** Polls until `check` resolves true; throws if the process exits first or time runs out. */
export async function waitFor(
  what: string,
  svc: Service,
  check: () => Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (svc.child.exitCode !== null || svc.child.signalCode !== null) {
      throw new Error(
        `${what} exited (${svc.child.exitCode ?? svc.child.signalCode}); ` +
          `see ${svc.logFile}:\n${tail(svc.logFile)}`,
      );
    }
    try {
      if (await check()) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline)
      throw new Error(`${what} not ready within ${timeoutMs} ms; see ${svc.logFile}:\n${tail(svc.logFile)}`);
    await sleep(25);
  }
}

export function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** Finds a binary on PATH, or in the sbin directories a non-login PATH may lack. */
export function findBinary(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/local/sbin', '/usr/sbin', '/sbin'];
  for (const d of dirs) {
    if (!d) continue;
    const p = join(d, name);
    if (existsSync(p)) return p;
  }
  return undefined;
}

let clkTck: number | undefined;
function ticksPerSecond(): number {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/** utime + stime of one process, in microseconds (kernel accounting, CLK_TCK resolution). */
export function procCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After "pid (comm) ": state is field 3, utime 14, stime 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / ticksPerSecond();
}

export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter((s) => s !== '')
      .map(Number);
  } catch {
    return [];
  }
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

export function rssMb(pid: number): number {
  return statusKb(pid, 'VmRSS') / 1024;
}

export function peakRssMb(pid: number): number {
  return statusKb(pid, 'VmHWM') / 1024;
}

/** Resets the kernel's peak-RSS mark (VmHWM) of a process; false where that is not allowed. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
