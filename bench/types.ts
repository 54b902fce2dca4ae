// The shape of bench/results/<date>.json.

import type { Workload } from './mcp.js';
import type { ProfileSummary } from './profile.js';
import type { UpstreamKind } from './services.js';

export type PathName =
  | 'direct'
  | 'causeway-memory'
  | 'causeway-redis'
  | 'passthrough'
  | 'nginx'
  | 'node-floor'
  | 'node-pipe'
  | 'node-translator'
  | 'causeway-cached'
  | 'causeway-uncached';

export const PATH_LABEL: Record<PathName, string> = {
  direct: 'direct legacy client (baseline)',
  'causeway-memory': 'Causeway modern, memory store',
  'causeway-redis': 'Causeway modern, Redis store',
  passthrough: 'Causeway legacy passthrough',
  nginx: 'nginx reverse proxy',
  'node-floor': 'minimal Node proxy (reference)',
  'node-pipe': 'Node TCP pipe (reference)',
  'node-translator': 'minimal Node translator (reference)',
  'causeway-cached': 'Causeway modern, tools/list kept in the gateway cache',
  'causeway-uncached': 'Causeway modern, gateway cache off',
};

export interface RunRecord {
  upstream: UpstreamKind;
  path: PathName;
  workload: Workload;
  concurrency: number;
  /** Completed operations: HTTP responses, or whole multi-round calls. */
  ops: number;
  seconds: number;
  opsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  errors: number;
  non2xx: number;
  /** Multi-round only: HTTP exchanges per call. */
  exchangesPerOp?: number;
  /** CPU of the proxy (Causeway or nginx) per operation, microseconds. */
  proxyCpuUsPerOp?: number;
  upstreamCpuUsPerOp: number;
  /** Peak RSS of the proxy during the run (kernel VmHWM, reset before the run), MB. */
  proxyPeakRssMb?: number;
  /**
   * Bytes the proxy allocated per operation over the timed window, and its scavenges per 10,000 (V8's --trace-gc-nvp).
   */
  allocBytesPerOp?: number;
  scavengesPer10k?: number;
  /** Bytes its scavenges promoted to the old generation per operation. */
  promotedBytesPerOp?: number;
  redisCommands?: number;
  redisCommandsByName?: Record<string, number>;
  redisCommandsPerOp?: number;
  /** Upstream initialize handshakes during the timed window. */
  upstreamInitialize: number;
  firstError?: string;
}

export interface TargetRow {
  name: string;
  target: string;
  value: string;
  /** null: could not be measured here. */
  met: boolean | null;
}

export interface MemoryResult {
  /** RSS and V8 heap used at start, after the sessions, after the pending calls. */
  steps: Array<{ what: string; rssMb: number; heapUsedMb?: number }>;
  sessions: number;
  pending: number;
  sessionsOk: number;
  pendingOk: number;
  errors: number;
  fillSeconds: number;
  rssMb: number;
  peakRssMb: number;
  heapUsedMb?: number;
  upstreamInitialize: number;
  firstError?: string;
}

/** Upstream HTTP exchanges one modern tools/call caused (raw upstream's own count, by kind). */
/** The cold-call phase's first call: the process's, which brings what an upstream needs once. */
export const FIRST_CALL = "the process's first call (a new principal; the upstream's scout comes with it)";

export interface ColdCall {
  what: string;
  exchanges: number;
  byKind: Record<string, number>;
  status: number;
}

/**
 * Redis commands executed over one step of the scale phase (INFO commandstats: a script's inner commands count too): in
 * all, by lower-case name, and per operation.
 */
export interface RedisDelta {
  total: number;
  byName: Record<string, number>;
  perOp: number;
}

/**
 * Redis commands sent over one step of the scale phase, as MONITOR listed them (a script call is
 * one; what runs inside it is not): by name (a script as `evalsha:` and its first key's pattern,
 * e.g. `evalsha:P session:{}`) and by name with key pattern. The background is told apart by
 * what it is: `beats` the replicas' liveness beats (the script on `P replicas`), `lastUse` the
 * pool's last-use batch (ZADD XX GT on the idle shards, PEXPIRE on records), `sweep` the idle
 * sweep (ZRANGEBYSCORE on the idle shards).
 */
export interface SentDelta {
  total: number;
  beats: number;
  lastUse: number;
  sweep: number;
  byName: Record<string, number>;
  byKey: Record<string, number>;
  /** (total - beats) / operations. */
  perOp: number;
  /** (total - beats - lastUse - sweep) / operations. */
  ownPerOp: number;
}

/** One pass of requests of the scale phase (one tools/call per principal). */
export interface ScaleStep {
  requests: number;
  ok: number;
  errors: number;
  seconds: number;
  firstError?: string;
  sent: SentDelta;
  executed: RedisDelta;
}

export interface ScaleReplica {
  name: string;
  /**
   * Pooled sessions this replica gained over the phase (causeway_pooled_sessions on /metrics), or sessions / replicas
   * where it has no such gauge.
   */
  sessions: number;
  sessionsFrom: 'metrics' | 'estimate';
  /** RSS once started and warmed by one request, and after the fill, the first touches and the idle window. */
  rssBeforeMb: number;
  rssAfterMb: number;
  /** RSS added per session, both readings right after a full collection. */
  rssPerSessionKb: number;
  /** The same without the collections: the burst's garbage included. */
  rawRssPerSessionKb?: number;
  /**
   * ESTABLISHED TCP connections from this replica to the upstream's port (its sockets in /proc/<pid>/fd matched in
   * /proc/<pid>/net/tcp*).
   */
  upstreamSockets: number;
}

/** What idle pooled upstream sessions cost, for Causeway replicas sharing one Redis (or one Redis Cluster). */
export interface ScaleRun {
  phase: 'scale' | 'scale-cluster';
  redis: string;
  sessions: number;
  replicas: number;
  concurrency: number;
  upstreamTools: number;
  clientCapabilities: Record<string, unknown>;
  /** BENCH_SCALE_SETTINGS passed to every replica, and the ones this build has no such setting for (left out). */
  extraSettings: Record<string, string | number>;
  skippedSettings: string[];
  /** Every principal's first request, round-robin over the replicas. */
  fill: ScaleStep;
  /** A sample of principals, each once on a replica other than the one that opened its session. */
  firstTouch: ScaleStep;
  /** scale-cluster: every principal again, on the replica of its first request. */
  warm?: ScaleStep;
  idle: {
    settleMs: number;
    seconds: number;
    sent: SentDelta;
    /** Commands sent per second, in all. */
    perSecond: number;
    /** Commands sent per second by name with key pattern, most frequent first (all of them). */
    top: Array<{ name: string; perSecond: number }>;
    executed: RedisDelta;
    executedPerSecond: number;
  };
  replicaStats: ScaleReplica[];
  /** The upstream's own counts (its /__stats) at the end: initialize over the phase, sessions and GET streams open. */
  upstream: { initialize: number; sessionsOpen?: number; getStreamsOpen?: number };
  wallSeconds: number;
}

/** The c=1 windows a proxy served before its timed runs, until its CPU per call held still. */
export interface SettleRecord {
  upstream: UpstreamKind;
  path: PathName;
  /** The process (Causeway's name in the run: causeway-paired, causeway-user-load, ...). */
  process?: string;
  /** CPU per call of each window, us. */
  cpuUsPerOp: number[];
  /** Whether the last two windows agreed; false: the window limit came first. */
  settled: boolean;
}

/** One window of the paired run: CPU, allocation and promotion per call (promotion missing before 2026-12-05). */
export interface PairedWindow {
  cpuUs: number;
  allocBytes: number;
  promotedBytes?: number;
}

/** One concurrency of the paired run: each side's alternating windows, in order. */
export interface PairedRow {
  concurrency: number;
  /** Windows of every process pair, pair after pair (each pair's `rounds` together). */
  causeway: PairedWindow[];
  translator: PairedWindow[];
  /** Process pairs the windows came from (one before this was recorded). */
  pairs?: number;
}

export interface BenchResults {
  date: string;
  wallSeconds: number;
  machine: { cpu: string; cores: number; memoryGb: number; os: string; node: string };
  settings: { runMs: number; warmupMs: number; processWarmupMs?: number; multiRoundRunMs: number; full: boolean };
  commands: Array<{ what: string; command: string }>;
  nginxConf?: string;
  unavailable: string[];
  upstreams: Array<{ kind: UpstreamKind; description: string; toolCount: number }>;
  cpuSource: Record<string, string>;
  runs: RunRecord[];
  settled?: SettleRecord[];
  /** The warm-call ratio measured in pairs (raw upstream): what the CPU and allocation targets read. */
  paired?: PairedRow[];
  /** Instructions per warm call under callgrind (raw upstream): the noise-free figure to compare a change by. */
  instructions?: InstructionsResult | { error: string };
  /**
   * The user's load test in rounds (SDK upstream, c=10): requests per second of each window, in
   * order. `pipe` (bytes spliced by a Node process, no HTTP) and `nginx` (absent where nginx is not
   * available) show what any process in the path leaves on this machine.
   */
  userLoad?: {
    concurrency: number;
    direct: number[];
    causeway: number[];
    translator: number[];
    pipe?: number[];
    nginx?: number[];
  };
  /**
   * The MCP Inspector CLI's load (c=10, one small tools/call after another) through a Causeway and
   * a minimal translator of their own and direct, on each upstream: requests per second of each
   * window. `start`: each window the first START_WINDOW_MS of a process just started (a new one
   * per window; direct's upstream is warm); `warm`: windows in rounds after an untimed warm-up.
   */
  inspectorLoad?: Array<{
    upstream: UpstreamKind;
    concurrency: number;
    startWindowMs: number;
    start: { direct: number[]; causeway: number[]; translator: number[] };
    warm: { direct: number[]; causeway: number[]; translator: number[] };
  }>;
  memory?: MemoryResult | { error: string };
  cold?: ColdCall[] | { error: string };
  /** A repeated tools/list of 1,000 tools through the gateway cache, against the cache off (c=16). */
  cache?:
    | { cachedCpuUsPerOp: number; uncachedCpuUsPerOp: number; upstreamListsWhileCached: number; ops: number }
    | { error: string };
  profile?: ProfileSummary & { what: string; cpuUsPerOp: number; file: string };
  scale?: Array<ScaleRun | { phase: ScaleRun['phase']; sessions: number; error: string }>;
  targets: TargetRow[];
}

/** One process's count: its main thread over the counted window. */
export interface InstructionCount {
  path: 'causeway-memory' | 'node-translator';
  /** Calls served under the tool before counting began. */
  warmCalls: number;
  calls: number;
  mainThread: number;
  perCall: number;
  /** The main thread's functions by their own instructions per call, most first (bench/callgrind-names.ts). */
  functions?: FunctionCount[];
}

export interface FunctionCount {
  name: string;
  perCall: number;
}

export interface InstructionsResult {
  concurrency: number;
  /** Calls each process served under the tool before counting, at least. */
  warmCalls: number;
  countMs: number;
  causeway: InstructionCount;
  translator: InstructionCount;
}
