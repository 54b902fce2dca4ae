// The services a bench run stands up: the two legacy upstreams, Causeway (one process per
// configuration), nginx as a plain reverse proxy, a private redis-server, and for the scale
// phase a private Redis Cluster.

import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { SETTINGS } from '../src/config/schema.js';
import { openLegacySession, probe, type Target } from './mcp.js';
import { childPids, findBinary, freePort, procCpuUs, startProcess, waitFor, type Service } from './procs.js';

export const DIST = fileURLToPath(new URL('..', import.meta.url));
export const ROOT = join(DIST, '..');
const CAUSEWAY_MAIN = join(DIST, 'src/main.js');
const SDK_FIXTURE = join(DIST, 'test/fixtures/legacy-server.js');
const RAW_UPSTREAM = join(DIST, 'bench/raw-upstream.js');

export type UpstreamKind = 'raw' | 'sdk';

export interface Upstream {
  kind: UpstreamKind;
  url: string;
  origin: string;
  port: number;
  svc: Service;
  toolCount: number;
  /** exchanges: HTTP requests by kind (raw upstream only). */
  stats(): Promise<{ initializeCount: number; exchanges?: Record<string, number> }>;
}

async function getJson(url: string): Promise<any> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}

async function okStatus(url: string): Promise<boolean> {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.status === 200;
}

async function launchUpstream(kind: UpstreamKind, logDir: string, tools: number): Promise<Upstream> {
  const port = await freePort();
  const args =
    kind === 'raw'
      ? [RAW_UPSTREAM, '--port', String(port), '--tools', String(tools)]
      : [SDK_FIXTURE, '--port', String(port), '--many-tools', String(tools)];
  const svc = startProcess(process.execPath, args, join(logDir, `upstream-${kind}.log`));
  const origin = `http://127.0.0.1:${port}`;
  await waitFor(`${kind} upstream`, svc, () => okStatus(`${origin}/__stats`));
  const url = `${origin}/mcp`;
  const session = await openLegacySession(url);
  const listed = await probe({ era: 'legacy', url, ...session }, 'list');
  return {
    kind,
    url,
    origin,
    port,
    svc,
    toolCount: (listed.result.tools as unknown[]).length,
    stats: async () => {
      const s = await getJson(`${origin}/__stats`);
      return { initializeCount: Number(s.initializeCount), exchanges: s.exchanges };
    },
  };
}

/**
 * Starts an upstream whose tools/list has `tools` tools (1,000 unless told): the raw one exactly;
 * the SDK fixture has built-in tools besides its `--many-tools` ones, so it is started once to
 * count them. Asked for fewer tools than it has built in, the SDK fixture keeps those only.
 */
export async function startUpstream(kind: UpstreamKind, logDir: string, tools = 1000): Promise<Upstream> {
  const first = await launchUpstream(kind, logDir, tools);
  if (kind === 'raw' || first.toolCount === tools) return first;
  const extra = Math.max(0, tools - (first.toolCount - tools));
  if (extra === tools) return first;
  await first.svc.stop();
  return launchUpstream(kind, logDir, extra);
}

/** A proxy process (Causeway or nginx): where to send requests and how to read its CPU. */
export interface Proxy {
  name: string;
  origin: string;
  /** Where /metrics is. */
  adminOrigin: string;
  url: string;
  svc: Service;
  /** Processes whose memory is the proxy's (nginx: master and workers). */
  pids(): number[];
  /** CPU time so far, microseconds, and where the figure comes from. */
  cpuUs(): Promise<number>;
  cpuSource: string;
  /** Its output, where V8 writes a line per collection (--trace-gc-nvp): what it allocated, read by gc.ts. */
  gcLog?: string;
  stop(): Promise<void>;
}

function parseMetric(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

export async function metricsOf(origin: string): Promise<string> {
  const res = await fetch(`${origin}/metrics`);
  return res.text();
}

/** Whether this build of Causeway has a setting (the bench runs against whatever src/ holds now). */
export function hasSetting(path: string): boolean {
  return SETTINGS.some((s) => s.path === path);
}

/** Settings every bench Causeway gets on top of the defaults: its ports. */
export async function benchSettings(): Promise<Record<string, string | number>> {
  const s: Record<string, string | number> = { 'listen.port': await freePort() };
  if (hasSetting('admin.port')) s['admin.port'] = await freePort();
  return s;
}

export async function startCauseway(
  name: string,
  upstreamUrl: string,
  settings: Record<string, string | number>,
  logDir: string,
  nodeArgs: string[] = [],
  launch: Launch = {},
): Promise<Proxy> {
  const all: Record<string, string | number> = { 'upstream.url': upstreamUrl, ...(await benchSettings()), ...settings };
  const flags = Object.entries(all).flatMap(([k, v]) => [`--${k}`, String(v)]);
  // OTEL_* of the bench's own environment reach Causeway: a run with them measures tracing on.
  const otel = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('OTEL_')));
  // As the image runs it (Dockerfile ENV): MALLOC_ARENA_MAX=2.
  const log = join(logDir, `${name}.log`);
  const svc = launched(launch, [GC_TRACE, ...nodeArgs, CAUSEWAY_MAIN, ...flags], log, {
    env: { PATH: process.env.PATH, MALLOC_ARENA_MAX: '2', ...otel },
  });
  const origin = `http://127.0.0.1:${all['listen.port']}`;
  // /metrics, /healthz and /readyz live on the admin port where there is one, else on the data port.
  const adminOrigin = all['admin.port'] !== undefined ? `http://127.0.0.1:${all['admin.port']}` : origin;
  await waitFor(name, svc, () => okStatus(`${adminOrigin}/readyz`), launch.startTimeoutMs);
  // Causeway's own accounting: process.cpuUsage() as prom-client exports it on /metrics.
  const fromMetrics = parseMetric(await metricsOf(adminOrigin), 'process_cpu_seconds_total') !== undefined;
  return {
    name,
    origin,
    adminOrigin,
    url: `${origin}/mcp`,
    svc,
    gcLog: log,
    pids: () => [svc.pid],
    cpuUs: async () => {
      if (!fromMetrics) return procCpuUs(svc.pid);
      return parseMetric(await metricsOf(adminOrigin), 'process_cpu_seconds_total')! * 1e6;
    },
    cpuSource: fromMetrics
      ? 'process_cpu_seconds_total on /metrics (process.cpuUsage)'
      : '/proc/<pid>/stat utime+stime',
    stop: () => svc.stop('SIGTERM', 3000),
  };
}

/**
 * A reference Node process in front of the upstream: the byte proxy (bench/node-floor.ts), the
 * TCP pipe (bench/node-pipe.ts) or the minimal 2026 translator (bench/node-translator.ts).
 */
export async function startNodeReference(
  kind: 'node-floor' | 'node-pipe' | 'node-translator',
  upstream: Upstream,
  logDir: string,
  launch: Launch = {},
  nodeArgs: string[] = [],
): Promise<Proxy> {
  const port = await freePort();
  const script = join(DIST, `bench/${kind}.js`);
  const log = join(logDir, `${kind}.log`);
  const svc = launched(
    launch,
    [GC_TRACE, ...nodeArgs, script, '--port', String(port), '--upstream', upstream.url],
    log,
  );
  const origin = `http://127.0.0.1:${port}`;
  await waitFor(
    kind,
    svc,
    async () => {
      const res = await fetch(origin);
      await res.arrayBuffer();
      return true;
    },
    launch.startTimeoutMs,
  );
  return {
    name: kind,
    origin,
    adminOrigin: origin,
    url: `${origin}/mcp`,
    svc,
    pids: () => [svc.pid],
    cpuUs: async () => procCpuUs(svc.pid),
    cpuSource: '/proc/<pid>/stat utime+stime',
    gcLog: log,
    stop: () => svc.stop('SIGTERM', 2000),
  };
}

/** How a Node process of the bench is started: by node itself, or under a tool that runs node (valgrind). */
export interface Launch {
  /** The tool's command line, node's own following it. */
  via?: string[];
  /** How long it may take to answer (a process under valgrind starts far slower). */
  startTimeoutMs?: number;
}

function launched(launch: Launch, nodeArgs: string[], log: string, opts?: Parameters<typeof startProcess>[3]): Service {
  const [tool, ...toolArgs] = launch.via ?? [];
  return tool === undefined
    ? startProcess(process.execPath, nodeArgs, log, opts)
    : startProcess(tool, [...toolArgs, process.execPath, ...nodeArgs], log, opts);
}

/**
 * V8 writes one line per collection, with the bytes allocated since the one before: the allocation budget is read from
 * them.
 */
const GC_TRACE = '--trace-gc-nvp';

export function nginxConfig(dir: string, port: number, upstreamPort: number): string {
  const root = process.getuid?.() === 0 ? 'user root;\n' : '';
  return `${root}worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream legacy { server 127.0.0.1:${upstreamPort}; keepalive 256; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://legacy;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`;
}

/**
 * nginx from PATH (or /usr/sbin), else Debian's package installed with apt-get when this runs as
 * root; `note` says which, or why there is none.
 */
export function findOrInstallNginx(): { bin?: string; note: string } {
  const found = findBinary('nginx');
  if (found) return { bin: found, note: `nginx found at ${found}` };
  if (process.getuid?.() !== 0 || !findBinary('apt-get'))
    return { note: 'no nginx binary on PATH, and apt-get cannot be run here (not root or no apt-get)' };
  const r = spawnSync('apt-get', ['install', '-y', 'nginx'], {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  const bin = findBinary('nginx');
  if (bin) return { bin, note: `nginx installed with apt-get install -y nginx (${bin})` };
  return {
    note: `apt-get install -y nginx failed (exit ${r.status}): ${(r.stderr || r.stdout).trim().split('\n').pop()}`,
  };
}

export async function startNginx(bin: string, upstream: Upstream, dir: string): Promise<Proxy & { conf: string }> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = nginxConfig(dir, port, upstream.port);
  const confFile = join(dir, 'nginx.conf');
  writeFileSync(confFile, conf);
  const svc = startProcess(
    bin,
    ['-p', `${dir}/`, '-e', join(dir, 'error.log'), '-c', confFile],
    join(dir, 'stdout.log'),
  );
  const origin = `http://127.0.0.1:${port}`;
  await waitFor('nginx', svc, () => okStatus(`${origin}/__stats`));
  const pids = () => [svc.pid, ...childPids(svc.pid)];
  return {
    name: 'nginx',
    origin,
    adminOrigin: origin,
    url: `${origin}/mcp`,
    svc,
    pids,
    cpuUs: async () => pids().reduce((sum, pid) => sum + procCpuUs(pid), 0),
    cpuSource: '/proc/<pid>/stat utime+stime of master and worker',
    stop: () => svc.stop('SIGQUIT', 3000),
    conf,
  };
}

export interface RedisServer {
  url: string;
  svc: Service;
  /** Commands executed so far, by lower-case name (INFO commandstats; the bench's own INFO calls left out). */
  commands(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

export async function startRedis(bin: string, dir: string): Promise<RedisServer> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const svc = startProcess(
    bin,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
      '--dir',
      dir,
      '--loglevel',
      'warning',
    ],
    join(dir, 'redis.log'),
  );
  const admin = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => 50,
  });
  admin.on('error', () => undefined);
  await waitFor('redis-server', svc, async () => {
    if (admin.status === 'wait') await admin.connect();
    return (await admin.ping()) === 'PONG';
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    svc,
    commands: () => commandStats(admin),
    stop: async () => {
      admin.disconnect();
      await svc.stop('SIGTERM', 2000);
    },
  };
}

/**
 * Calls so far by lower-case command name, from one node's INFO commandstats (INFO itself left out: the bench sends
 * it).
 */
async function commandStats(admin: Redis): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const out: Record<string, number> = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== 'info') out[m[1]!] = Number(m[2]);
  return out;
}

/** A port whose cluster bus port (port + 10000) is free too. */
async function clusterPort(taken: number[]): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = await freePort();
    if (port >= 55_535 || taken.includes(port) || taken.includes(port + 10_000)) continue;
    if (await portFree(port + 10_000)) return port;
  }
  throw new Error('no free port with a free cluster bus port');
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

export interface RedisClusterServer {
  /** host:port of each primary: the store.redisCluster seeds. */
  nodes: string[];
  svcs: Service[];
  /** Commands executed so far, by lower-case name, summed over every node. */
  commands(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of `primaries` primaries and no replicas (`redis-cli --cluster create`), as
 * test/helpers/redis.ts builds its own but without the failover replicas the bench does not need.
 */
export async function startRedisCluster(
  bin: string,
  cli: string,
  dir: string,
  primaries = 3,
): Promise<RedisClusterServer> {
  mkdirSync(dir, { recursive: true });
  const ports: number[] = [];
  for (let i = 0; i < primaries; i++) ports.push(await clusterPort(ports));
  const svcs: Service[] = [];
  const admins: Redis[] = [];
  const stop = async () => {
    for (const a of admins) a.disconnect();
    await Promise.all(svcs.map((s) => s.stop('SIGTERM', 2000)));
  };
  try {
    for (const port of ports) {
      const args = [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'no',
        '--dir',
        dir,
        '--loglevel',
        'warning',
      ];
      args.push(
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '2000',
      );
      const svc = startProcess(bin, args, join(dir, `redis-${port}.log`));
      svcs.push(svc);
      const admin = new Redis({
        port,
        host: '127.0.0.1',
        lazyConnect: true,
        maxRetriesPerRequest: 1,
        retryStrategy: () => 50,
      });
      admin.on('error', () => undefined);
      admins.push(admin);
      await waitFor(`redis-server (cluster node ${port})`, svc, async () => {
        if (admin.status === 'wait') await admin.connect();
        return (await admin.ping()) === 'PONG';
      });
    }
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    const made = spawnSync(cli, ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (made.status !== 0)
      throw new Error(
        `redis-cli --cluster create ` +
          `exited ${made.status}: ${(made.stderr || made.stdout).trim().split('\n').pop()}`,
      );
    // Slots are assigned at once, but each node says ok only once it has heard of the others.
    await waitFor(
      'redis cluster_state:ok on every node',
      svcs[0]!,
      async () => {
        for (const a of admins) if (!/cluster_state:ok/.test(String(await a.call('CLUSTER', 'INFO')))) return false;
        return true;
      },
      30_000,
    );
    return {
      nodes,
      svcs,
      commands: async () => {
        const out: Record<string, number> = {};
        for (const stats of await Promise.all(admins.map(commandStats)))
          for (const [k, n] of Object.entries(stats)) out[k] = (out[k] ?? 0) + n;
        return out;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The .cpuprofile a `--cpu-prof --cpu-prof-dir DIR` process wrote. */
export function profileIn(dir: string): string | undefined {
  const f = readdirSync(dir).find((n) => n.endsWith('.cpuprofile'));
  return f === undefined ? undefined : join(dir, f);
}

export type { Target };
