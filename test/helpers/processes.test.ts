// The process helper keeps its promise: a child is gone once its test ends (SIGKILL when it
// ignores SIGTERM), and once the test process exits, whatever way it exits.

import t from 'tap';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { exitOf, isRunning, spawnOwned, stopProcess } from './processes.js';
import { until } from './until.js';

/** A node child that ignores SIGTERM and says so on stdout once it does. */
const STUBBORN = "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('ready');";

function ready(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)));
  });
}

/** Whether `pid` still runs (a zombie waiting for whoever reaps orphans does not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

t.test('a child is stopped when its test ends; SIGKILL after the grace period', async (t) => {
  let child: ChildProcess | undefined;
  await t.test('owner', async (t) => {
    child = spawnOwned(process.execPath, ['-e', STUBBORN], { t, graceMs: 200, stdio: ['ignore', 'pipe', 'inherit'] });
    await ready(child);
    t.ok(isRunning(child));
  });
  t.equal(isRunning(child!), false, 'gone once the owner test has ended');
  t.equal(child!.signalCode, 'SIGKILL', 'SIGTERM was ignored, so SIGKILL');
});

t.test('stopProcess: a graceful exit, and a child already gone', async (t) => {
  const child = spawnOwned(process.execPath, ['-e', "setInterval(() => {}, 1000); console.log('ready');"], {
    t,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await ready(child);
  t.same(await stopProcess(child), { code: null, signal: 'SIGTERM' });
  t.same(await stopProcess(child), { code: null, signal: 'SIGTERM' }, 'again: at once');
  t.same(await exitOf(child), { code: null, signal: 'SIGTERM' });
});

t.test('whatever is left is SIGKILLed when the test process exits', async (t) => {
  // A process that starts a stubborn child through the helper, prints its pid and exits at once.
  const helper = fileURLToPath(new URL('./processes.js', import.meta.url));
  const script = `
    const { spawnOwned } = await import(${JSON.stringify(helper)});
    const child = spawnOwned(process.execPath, ['-e', ${JSON.stringify(STUBBORN)}], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout.once('data', () => { process.stderr.write(child.pid + '\\n'); process.exit(3); });
  `;
  const parent = spawnOwned(process.execPath, ['--input-type=module', '-e', script], {
    t,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const pid = await new Promise<number>((resolve, reject) => {
    let err = '';
    parent.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /^(\d+)\n/m.exec(err);
      if (m) resolve(Number(m[1]));
    });
    parent.once('exit', () => setTimeout(() => reject(new Error(`no pid: ${err}`)), 100));
  });
  t.equal((await exitOf(parent)).code, 3);
  await until(() => !alive(pid), { what: `the grandchild ${pid} to go` }).catch(() => undefined);
  t.notOk(alive(pid), `the grandchild ${pid} is gone`);
  if (alive(pid)) process.kill(pid, 'SIGKILL');
});
