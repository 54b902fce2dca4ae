// A private redis-server for a test: a free port, no persistence, killable and restartable on the
// same port. A missing redis-server binary is an error (the test fails), never a skip.

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { spawnOwned, stopProcess, type Owner } from './processes.js';

export interface RunningRedis {
  port: number;
  url: string;
  /** A plain client for assertions (INFO, KEYS, PTTL...). Reconnects by itself after a restart. */
  admin: Redis;
  /** SIGKILL: the data is gone (no persistence). */
  kill(): Promise<void>;
  /** Starts it again on the same port (after kill). */
  restart(): Promise<void>;
  /** Counts from INFO commandstats, by lower-case command name. */
  commandStats(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

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

const BINARY = process.env.REDIS_SERVER ?? 'redis-server';

/** A redis-server of its own for `t` (the root tap, i.e. the whole file, when none is given); it is stopped when that test ends. */
export async function startRedis(t?: Owner): Promise<RunningRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'causeway-redis-'));
  let child: ChildProcess | undefined;

  const launch = async (): Promise<void> => {
    const proc = spawnOwned(
      BINARY,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--protected-mode', 'no', '--loglevel', 'warning'],
      { t, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    let output = '';
    proc.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await new Promise<void>((resolve, reject) => {
      proc.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'ENOENT'
            ? new Error(`redis-server not found (${BINARY}); these tests need it on PATH (or REDIS_SERVER=/path/to/redis-server)`)
            : err,
        ),
      );
      proc.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)));
      const deadline = Date.now() + 10_000;
      const probe = () => {
        const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        c.on('error', () => undefined);
        c.connect()
          .then(() => c.ping())
          .then(
            () => {
              c.disconnect();
              resolve();
            },
            () => {
              c.disconnect();
              if (Date.now() > deadline) reject(new Error(`redis-server did not answer on ${port}: ${output}`));
              else setTimeout(probe, 25);
            },
          );
      };
      probe();
    });
  };

  await launch();
  const admin = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  admin.on('error', () => undefined);

  const kill = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc) await stopProcess(proc, { signal: 'SIGKILL' });
  };

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    admin,
    kill,
    restart: async () => {
      await kill();
      await launch();
    },
    async commandStats() {
      const info = await admin.info('commandstats');
      const out: Record<string, number> = {};
      for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]!] = Number(m[2]);
      return out;
    },
    async stop() {
      admin.disconnect();
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
