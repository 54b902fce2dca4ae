// Debian's nginx as a test process: a top-level config of its own (one worker, every temp path
// and log in a temp dir) that includes the http-context config a test gives it. The process is
// stopped when its test ends and the temp dir removed after it. A missing binary is an error,
// never a skip (NGINX=/path/to/nginx overrides the lookup).

import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { spawnOwned, type Owner } from './processes.js';
import { freePort } from './redis.js';
import { until } from './until.js';

export interface RunningNginx {
  port: number;
  dir: string;
  /** One line per request: `$http_mcp_method|$http_mcp_name|$upstream_addr|$status|$connection`. */
  accessLog: string;
  /**
   * What an ingress controller does when the endpoints change: writes `httpConf(port)` in place
   * of the included config and reloads (`nginx -s reload`). Resolves once a worker of the new
   * config runs; the workers of the old one are left to finish what they serve and exit.
   */
  reload(httpConf: (port: number) => string): Promise<void>;
  /** Resolves once no worker of a config older than the last reload is left. */
  oldWorkersGone(): Promise<void>;
}

export function findNginx(): string {
  if (process.env.NGINX) return process.env.NGINX;
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin'];
  const found = dirs.map((d) => join(d, 'nginx')).find((p) => existsSync(p));
  if (found === undefined) {
    throw new Error(
      'nginx not found on PATH nor in /usr/sbin: this test ' +
        'needs it (apt-get install nginx, or NGINX=/path/to/nginx)',
    );
  }
  return found;
}

/**
 * Starts nginx with `httpConf(port)` included in its http block, listening where that config
 * says (it is given the free port chosen for it).
 */
export async function startNginx(t: Owner, httpConf: (port: number) => string): Promise<RunningNginx> {
  const bin = findNginx();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'causeway-nginx-'));
  // A root master hands requests to workers running as nobody: they must reach the temp dirs.
  chmodSync(dir, 0o755);
  const accessLog = join(dir, 'access.log');
  writeFileSync(join(dir, 'routing.conf'), httpConf(port));
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 1024; }
http {
  log_format routed '$http_mcp_method|$http_mcp_name|$upstream_addr|$status|$connection';
  access_log ${accessLog} routed;
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  include ${join(dir, 'routing.conf')};
}
`,
  );
  const child = spawnOwned(bin, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], {
    t,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Teardowns run in the order they were registered: nginx is stopped first, then its dir goes.
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  let gone: Error | undefined;
  child.once('error', (err: NodeJS.ErrnoException) => {
    gone ??=
      err.code === 'ENOENT'
        ? new Error(`nginx not found at ${bin}: this test needs it (apt-get install nginx, or NGINX=/path/to/nginx)`)
        : err;
  });
  child.once('exit', (code) => {
    const log = existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '';
    gone ??= new Error(`nginx exited with ${code}: ${output}${log}`);
  });
  const listening = () =>
    new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => {
        s.destroy();
        resolve(false);
      });
    });
  // A child that is gone ends the wait at once.
  await until(async () => gone ?? (await listening()), {
    what: `nginx to listen on ${port}`,
    timeoutMs: 10_000,
    everyMs: 25,
  }).catch((err: Error) => {
    throw new Error(`${err.message}: ${output}`);
  });
  if (gone) throw gone;
  const master = child.pid!;
  let oldWorkers = new Set<number>();
  return {
    port,
    dir,
    accessLog,
    reload: async (next) => {
      oldWorkers = new Set(await workersOf(master));
      writeFileSync(join(dir, 'routing.conf'), next(port));
      await signalMaster(bin, dir);
      await until(async () => (await workersOf(master)).some((w) => !oldWorkers.has(w)), {
        what: 'a worker of the reloaded config',
        everyMs: 10,
      });
    },
    oldWorkersGone: async () => {
      await until(async () => !(await workersOf(master)).some((w) => oldWorkers.has(w)), {
        what: 'the old nginx workers to exit',
        everyMs: 25,
      });
    },
  };
}

/** `nginx -s reload` for the instance in `dir`: the master re-reads its config and replaces its workers. */
function signalMaster(bin: string, dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-s', 'reload'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    p.once('error', reject);
    p.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`nginx -s reload exited with ${code}: ${err}`)),
    );
  });
}

/** Pids of the live children of `master` (its workers), from /proc. */
async function workersOf(master: number): Promise<number[]> {
  // The kernel's list of a process's children (CONFIG_PROC_CHILDREN); else every process is read.
  const listed = await readFile(`/proc/${master}/task/${master}/children`, 'utf8').then(
    (text) => text.split(' ').filter(Boolean),
    () => readdir('/proc').then((names) => names.filter((n) => /^\d+$/.test(n))),
  );
  const pids: number[] = [];
  for (const pid of listed) {
    // The fields after the parenthesised command: state, ppid, ...; a zombie has already exited.
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(ppid) === master && state !== 'Z') pids.push(Number(pid));
  }
  return pids;
}
