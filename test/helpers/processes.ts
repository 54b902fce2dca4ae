// Every child process a test starts goes through here, so none outlives its test: each child is
// stopped (SIGTERM, then SIGKILL after a grace period) when the test that started it ends, pass
// or fail, and anything still running when the test process exits is SIGKILLed synchronously.
// A failed test therefore never leaves a fixture holding a port for the next one.

import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import tap from 'tap';

/** What owns a child: a tap test (its teardown stops the child). */
export interface Owner {
  teardown(fn: () => unknown): void;
}

export interface OwnedSpawnOptions extends SpawnOptions {
  /** The test that owns the child; the root tap (end of the file) when none is given. */
  t?: Owner;
  /** Ms between the teardown's SIGTERM and its SIGKILL. */
  graceMs?: number;
}

export const DEFAULT_GRACE_MS = 5_000;

const live = new Set<ChildProcess>();

process.on('exit', () => {
  for (const child of live) if (isRunning(child)) child.kill('SIGKILL');
});

/** True until the child has exited (false too when it never started). */
export function isRunning(child: ChildProcess): boolean {
  return child.pid !== undefined && child.exitCode === null && child.signalCode === null;
}

/** Whether a process of any parent still runs (signal 0 only checks it is there). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Resolves when the child has exited (at once if it already has, or never started). */
export function exitOf(child: ChildProcess): Promise<Exit> {
  if (!isRunning(child)) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/**
 * Sends `signal` (SIGTERM unless told) and waits for the exit; still running after `graceMs`,
 * the child is SIGKILLed. A child already gone resolves at once.
 */
export async function stopProcess(
  child: ChildProcess,
  opts: { signal?: NodeJS.Signals; graceMs?: number } = {},
): Promise<Exit> {
  if (!isRunning(child)) return exitOf(child);
  const exited = exitOf(child);
  const signal = opts.signal ?? 'SIGTERM';
  child.kill(signal);
  if (signal === 'SIGKILL') return exited;
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.graceMs ?? DEFAULT_GRACE_MS);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** spawn(), with the child recorded and stopped when its owner test ends (or the process exits). */
export function spawnOwned(command: string, args: readonly string[], opts: OwnedSpawnOptions = {}): ChildProcess {
  const { t = tap, graceMs, ...spawnOptions } = opts;
  const child = spawn(command, args, spawnOptions);
  live.add(child);
  // (A command that could not be started never exits; isRunning is false for it.)
  child.once('exit', () => live.delete(child));
  t.teardown(() => stopProcess(child, { graceMs }));
  return child;
}
