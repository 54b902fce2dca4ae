// A private redis-server for a test: a free port, no persistence, killable and restartable on the
// same port. A missing redis-server binary is an error (the test fails), never a skip.

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import tap from 'tap';
import { spawnOwned, stopProcess, type Owner } from './processes.js';
import { until } from './until.js';

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

/**
 * A redis-server of its own for `t` (the root tap, i.e. the whole file, when none is given); it is stopped when that
 * test ends.
 */
export async function startRedis(t?: Owner): Promise<RunningRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'causeway-redis-'));
  let child: ChildProcess | undefined;

  const launch = async (): Promise<void> => {
    const node = launchNode(
      t,
      BINARY,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--protected-mode',
        'no',
        '--loglevel',
        'warning',
      ],
      port,
    );
    child = node.child;
    await node.up;
  };

  await launch();
  const admin = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  admin.on('error', () => undefined);
  // Its reconnect loop would keep the test file alive once the server is gone.
  (t ?? tap).teardown(() => {
    admin.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

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

// ---- High availability: a Sentinel set and a Cluster, each of real processes ----

const SENTINEL_BINARY = process.env.REDIS_SENTINEL ?? BINARY;
const CLI = process.env.REDIS_CLI ?? 'redis-cli';

export interface RedisNode {
  port: number;
  /** host:port */
  addr: string;
  /** A plain client of this node alone; it gives up on a dead node instead of retrying forever. */
  admin: Redis;
  child: ChildProcess;
  /** SIGKILL (no persistence: its data is gone). */
  kill(): Promise<void>;
}

/** A client of one node that never queues and gives up quickly. */
function nodeClient(port: number): Redis {
  const c = new Redis({
    port,
    host: '127.0.0.1',
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    connectTimeout: 1000,
    retryStrategy: (n) => (n > 20 ? null : 100),
  });
  c.on('error', () => undefined);
  return c;
}

/** Resolves once `port` answers PING; rejects when `child` exits first or after 10 s. */
async function answering(port: number, child: ChildProcess, output: () => string): Promise<void> {
  let gone: Error | undefined;
  child.once('error', (err: NodeJS.ErrnoException) => {
    gone ??=
      err.code === 'ENOENT'
        ? new Error(`${String(child.spawnfile)} not found; these tests need redis-server and redis-cli on PATH`)
        : err;
  });
  const onExit = (code: number | null) => (gone ??= new Error(`redis on ${port} exited with ${code}: ${output()}`));
  child.once('exit', onExit);
  const ping = async () => {
    const c = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    c.on('error', () => undefined);
    try {
      await c.connect();
      return (await c.ping()) === 'PONG';
    } finally {
      c.disconnect();
    }
  };
  try {
    // A child that is gone ends the wait at once.
    await until(async () => gone ?? (await ping()), {
      what: `redis to answer on ${port}`,
      timeoutMs: 10_000,
      everyMs: 25,
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}: ${output()}`);
  } finally {
    child.off('exit', onExit);
  }
  if (gone) throw gone;
}

function launchNode(
  t: Owner | undefined,
  command: string,
  args: string[],
  port: number,
): { child: ChildProcess; up: Promise<void> } {
  const child = spawnOwned(command, args, { t, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  return { child, up: answering(port, child, () => output) };
}

function node(port: number, child: ChildProcess): RedisNode {
  const admin = nodeClient(port);
  return {
    port,
    addr: `127.0.0.1:${port}`,
    admin,
    child,
    kill: async () => {
      await stopProcess(child, { signal: 'SIGKILL' });
      admin.disconnect();
    },
  };
}

const SERVER_ARGS = [
  '--bind',
  '127.0.0.1',
  '--save',
  '',
  '--appendonly',
  'no',
  '--protected-mode',
  'no',
  '--loglevel',
  'warning',
];
// A replica syncs straight off the socket: no RDB file between them.
const SYNC_ARGS = ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'];

export interface SentinelSet {
  name: string;
  primary: RedisNode;
  replica: RedisNode;
  sentinels: RedisNode[];
  /** host:port of each Sentinel (store.redisSentinels). */
  sentinelAddrs: string[];
  /** The primary's port as Sentinel `sentinelIndex` names it now (undefined when it cannot tell). */
  masterPort(sentinelIndex?: number): Promise<number | undefined>;
  stop(): Promise<void>;
}

/**
 * A primary, its replica and three Sentinels (quorum 2, down after 1 s, failover timeout 5 s),
 * on free ports with their files in one temp dir; resolves once the replica is in sync and every
 * Sentinel knows the replica and the two other Sentinels, so a failover can happen at once.
 */
export async function startSentinelSet(t?: Owner, name = 'mymaster'): Promise<SentinelSet> {
  const dir = mkdtempSync(join(tmpdir(), 'causeway-sentinel-'));
  const [pp, rp, ...sp] = await distinctFreePorts(5);
  const p = launchNode(
    t,
    BINARY,
    ['--port', String(pp), '--dir', dir, '--dbfilename', `dump-${pp}.rdb`, ...SERVER_ARGS, ...SYNC_ARGS],
    pp!,
  );
  await p.up;
  const r = launchNode(
    t,
    BINARY,
    [
      '--port',
      String(rp),
      '--dir',
      dir,
      '--dbfilename',
      `dump-${rp}.rdb`,
      '--replicaof',
      '127.0.0.1',
      String(pp),
      ...SERVER_ARGS,
      ...SYNC_ARGS,
    ],
    rp!,
  );
  await r.up;
  const sentinels: RedisNode[] = [];
  for (const port of sp) {
    // Sentinel rewrites its own config file (what it learned), so each has a writable one.
    const conf = join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        'protected-mode no',
        `dir ${dir}`,
        'loglevel warning',
        `sentinel monitor ${name} 127.0.0.1 ${pp} 2`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    const s = launchNode(t, SENTINEL_BINARY, [conf, '--sentinel'], port!);
    await s.up;
    sentinels.push(node(port!, s.child));
  }
  const primary = node(pp!, p.child);
  const replica = node(rp!, r.child);
  const stop = async () => {
    for (const n of [...sentinels, replica, primary]) await n.kill();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(async () => /master_link_status:up/.test(await replica.admin.info('replication')), {
      what: 'the replica in sync',
      everyMs: 100,
    });
    await until(
      async () => {
        for (const s of sentinels) {
          const replicas = (await s.admin.call('SENTINEL', 'REPLICAS', name)) as unknown[];
          const peers = (await s.admin.call('SENTINEL', 'SENTINELS', name)) as unknown[];
          if (replicas.length < 1 || peers.length < 2) return false;
        }
        return true;
      },
      // Sentinel reads the primary's INFO every 10 s at first, and says hello every 2 s.
      { what: 'every Sentinel knowing the replica and the two other Sentinels', timeoutMs: 45_000, everyMs: 200 },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    name,
    primary,
    replica,
    sentinels,
    sentinelAddrs: sentinels.map((s) => s.addr),
    async masterPort(i = 0) {
      const addr = (await sentinels[i]!.admin.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name).catch(() => null)) as
        | string[]
        | null;
      return addr ? Number(addr[1]) : undefined;
    },
    stop,
  };
}

export interface ClusterNodeView {
  id: string;
  addr: string;
  port: number;
  flags: string[];
  primaryId: string | undefined;
  /** Slot ranges [from, to] this node serves (primaries). */
  slots: Array<[number, number]>;
}

export interface RunningCluster {
  nodes: RedisNode[];
  /** host:port of each node (store.redisCluster). */
  addrs: string[];
  /** CLUSTER NODES as seen from `from` (any live node). */
  view(from: RedisNode): Promise<ClusterNodeView[]>;
  /** The node serving `key`'s slot as primary, as `from` sees it. */
  primaryOf(key: string, from: RedisNode): Promise<ClusterNodeView | undefined>;
  stop(): Promise<void>;
}

function parseClusterNodes(text: string): ClusterNodeView[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, addr, flags, primary, , , , , ...slots] = line.split(' ');
      const hostPort = addr!.split('@')[0]!;
      return {
        id: id!,
        addr: hostPort,
        port: Number(hostPort.split(':')[1]),
        flags: flags!.split(','),
        primaryId: primary === '-' ? undefined : primary,
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [a, b] = s.split('-');
            return [Number(a), Number(b ?? a)] as [number, number];
          }),
      };
    });
}

/**
 * A 3-primary Redis Cluster with one replica each (6 nodes, node timeout 1 s), made by
 * `redis-cli --cluster create`; resolves once every node says cluster_state:ok and sees all six.
 * Each node's bus port (port + 10000) is free too.
 */
export async function startCluster(t?: Owner): Promise<RunningCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'causeway-cluster-'));
  const ports = await distinctFreePorts(6, true);
  const launched = ports.map((port) =>
    launchNode(
      t,
      BINARY,
      [
        '--port',
        String(port),
        '--dir',
        dir,
        '--dbfilename',
        `dump-${port}.rdb`,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '1000',
        ...SERVER_ARGS,
        ...SYNC_ARGS,
      ],
      port,
    ),
  );
  await Promise.all(launched.map((l) => l.up));
  const nodes = launched.map((l, i) => node(ports[i]!, l.child));
  const stop = async () => {
    for (const n of nodes) await n.kill();
    rmSync(dir, { recursive: true, force: true });
  };
  const view = async (from: RedisNode) => parseClusterNodes(String(await from.admin.call('CLUSTER', 'NODES')));
  try {
    await new Promise<void>((resolve, reject) => {
      const cli = spawnOwned(
        CLI,
        ['--cluster', 'create', ...nodes.map((n) => n.addr), '--cluster-replicas', '1', '--cluster-yes'],
        {
          t,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      cli.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      cli.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      const timer = setTimeout(() => {
        cli.kill('SIGKILL');
        reject(new Error(`redis-cli --cluster create took over 30 s: ${out}`));
      }, 30_000);
      cli.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      cli.once('exit', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`redis-cli --cluster create exited with ${code}: ${out}`));
      });
    });
    await until(
      async () => {
        for (const n of nodes) {
          if (!/cluster_state:ok/.test(String(await n.admin.call('CLUSTER', 'INFO')))) return false;
          const v = await view(n);
          if (v.length !== 6 || v.filter((x) => x.flags.includes('master')).length !== 3) return false;
          if (v.some((x) => x.flags.includes('fail') || x.flags.includes('fail?') || x.flags.includes('handshake')))
            return false;
        }
        for (const n of nodes) {
          const info = await n.admin.info('replication');
          if (/role:slave/.test(info) && !/master_link_status:up/.test(info)) return false;
        }
        return true;
      },
      {
        what: 'every cluster node ok and seeing six nodes, three primaries each with a replica in sync',
        timeoutMs: 45_000,
        everyMs: 200,
      },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    nodes,
    addrs: nodes.map((n) => n.addr),
    view,
    async primaryOf(key, from) {
      const slot = Number(await from.admin.call('CLUSTER', 'KEYSLOT', key));
      return (await view(from)).find(
        (v) =>
          v.flags.includes('master') && !v.flags.includes('fail') && v.slots.some(([a, b]) => slot >= a && slot <= b),
      );
    },
    stop,
  };
}

/** `n` different free ports; with `bus`, each port + 10000 is free too (a cluster node's bus port). */
async function distinctFreePorts(n: number, bus = false): Promise<number[]> {
  const out: number[] = [];
  for (let tries = 0; out.length < n && tries < 200; tries++) {
    const port = await freePort();
    if (out.includes(port) || (bus && out.includes(port + 10_000))) continue;
    if (bus && (port >= 55_535 || !(await isFree(port + 10_000)))) continue;
    out.push(port);
  }
  if (out.length < n) throw new Error(`could not find ${n} free ports`);
  return out;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
