// Starts Causeway for a test: in this process (fast, for most tests) or as a child process of
// the built bin (for kill / restart / drain tests). Settings are given as flags, so the real
// config loader is exercised too.

import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { createApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { spawnOwned, stopProcess, type Owner } from './processes.js';
import { strictlyInvalid } from './strict-json.js';

export interface RunningCauseway {
  url: string;
  port: number;
  /** Origin of the admin port (/metrics, /healthz, /readyz); undefined with admin.port -1. */
  adminUrl: string | undefined;
  /** JSON log lines written so far (in-process: captured; child: its stdout). */
  logs: string[];
  close(): Promise<void>;
}

export type Settings = Record<string, string | number>;

/** Free ports, and no drain delay: a test that stops Causeway has no load balancer to wait for. */
const TEST_DEFAULTS: Settings = { 'listen.port': 0, 'admin.port': 0, 'drain.delayMs': 0 };

function flags(settings: Settings): string[] {
  return Object.entries(settings).flatMap(([k, v]) => [`--${k}`, String(v)]);
}

export async function startCauseway(settings: Settings): Promise<RunningCauseway & { app: App }> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(line);
      cb();
    },
  });
  const config = loadConfig(flags({ ...TEST_DEFAULTS, 'log.level': 'debug', ...settings }), {});
  const app = createApp(config, createLogger(config.log.level, sink));
  const addr = await app.listen();
  return {
    app,
    url: app.url!,
    port: addr.port,
    adminUrl: app.adminUrl,
    logs,
    close: () => app.drain().then(() => strictLogs(logs)),
  };
}

/** Every line Causeway wrote must be one a strict JSON parser takes: no key twice in one object. */
function strictLogs(logs: readonly string[]): void {
  const bad = strictlyInvalid(logs);
  if (bad.length > 0) throw new Error(`log lines a strict JSON parser refuses:\n${bad.slice(0, 5).join('\n')}`);
}

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

export interface SpawnOptions {
  /** The test that owns the child: stopped when it ends. The root tap (end of file) when none is given. */
  t?: Owner;
  /** Environment of the child, beside PATH (nothing else is inherited). */
  env?: NodeJS.ProcessEnv;
  /** Run the child under `ulimit -n <nofile>` (bash sets it, then execs node). */
  nofile?: number;
  /** Ms from close()'s (or the teardown's) SIGTERM to SIGKILL; a drain is given this long. */
  graceMs?: number;
  /** The bin to run instead of this checkout's build (e.g. an installed package's), and its working folder. */
  main?: string;
  cwd?: string;
}

/**
 * The built bin as a child process; it must log at info or chattier to announce its URL. The
 * child is stopped when its test ends (see processes.ts), whether or not close() was called.
 */
export async function spawnCauseway(
  settings: Settings,
  options: SpawnOptions = {},
): Promise<RunningCauseway & { child: ChildProcess }> {
  const graceMs = options.graceMs ?? 10_000;
  const args = [options.main ?? MAIN, ...flags({ ...TEST_DEFAULTS, 'log.level': 'info', ...settings })];
  const [command, argv] =
    options.nofile === undefined
      ? [process.execPath, args]
      : ['bash', ['-c', `ulimit -n ${options.nofile} && exec "$0" "$@"`, process.execPath, ...args]];
  const child = spawnOwned(command, argv, {
    t: options.t,
    graceMs,
    env: { PATH: process.env.PATH, ...options.env },
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  let adminUrl: string | undefined;
  const url = await new Promise<string>((resolve, reject) => {
    let buf = '';
    // Generous: a busy machine can take long to start a node process; only a hang should reach it.
    const timer = setTimeout(() => reject(new Error(`causeway did not start: ${stderr}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        logs.push(line);
        try {
          const j = JSON.parse(line) as { msg?: string; url?: string; adminUrl?: string };
          if (j.msg === 'causeway listening' && j.url) {
            clearTimeout(timer);
            adminUrl = j.adminUrl;
            resolve(j.url);
          }
        } catch {
          /* not a log line */
        }
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`causeway exited with ${code}: ${stderr}`));
    });
  });
  return {
    child,
    url,
    port: Number(new URL(url).port),
    adminUrl,
    logs,
    close: async () => {
      await stopProcess(child, { graceMs });
      strictLogs(logs);
    },
  };
}
