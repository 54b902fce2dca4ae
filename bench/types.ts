// The shape of bench/results/<date>.json.

import type { Workload } from './mcp.js';
import type { ProfileSummary } from './profile.js';
import type { UpstreamKind } from './services.js';

export type PathName = 'direct' | 'causeway-memory' | 'causeway-redis' | 'passthrough' | 'nginx' | 'node-floor' | 'node-translator';

export const PATH_LABEL: Record<PathName, string> = {
  direct: 'direct legacy client (baseline)',
  'causeway-memory': 'Causeway modern, memory store',
  'causeway-redis': 'Causeway modern, Redis store',
  passthrough: 'Causeway legacy passthrough',
  nginx: 'nginx reverse proxy',
  'node-floor': 'minimal Node proxy (reference)',
  'node-translator': 'minimal Node translator (reference)',
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
export interface ColdCall {
  what: string;
  exchanges: number;
  byKind: Record<string, number>;
  status: number;
}

/** Redis commands over one step of the scale phase: in all, by lower-case name, and per operation. */
export interface RedisDelta {
  total: number;
  byName: Record<string, number>;
  perOp: number;
}

/** One pass of requests of the scale phase (one tools/call per principal). */
export interface ScaleStep {
  sent: number;
  ok: number;
  errors: number;
  seconds: number;
  firstError?: string;
  redis: RedisDelta;
  /**
   * Of redis.perOp, what the sessions already open would have sent anyway: the idle window's rate
   * over the step's duration (half of it for the fill, as sessions open all through it), per
   * operation. An estimate; perOp minus it is the step's own cost. Only for a step at least as
   * long as the idle window (the idle traffic comes in bursts a shorter step does not average).
   */
  backgroundPerOp?: number;
}

export interface ScaleReplica {
  name: string;
  /** Pooled sessions this replica gained over the phase (causeway_pooled_sessions on /metrics), or sessions / replicas where it has no such gauge. */
  sessions: number;
  sessionsFrom: 'metrics' | 'estimate';
  /** RSS once started and warmed by one request, and after the fill, the first touches and the idle window. */
  rssBeforeMb: number;
  rssAfterMb: number;
  rssPerSessionKb: number;
  /** ESTABLISHED TCP connections from this replica to the upstream's port (its sockets in /proc/<pid>/fd matched in /proc/<pid>/net/tcp*). */
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
  warm?: ScaleStep & {
    /** Commands per call beyond the last-use batch (ZADD, PEXPIRE) and beyond the idle window's own rate of each command over the pass (plus one 5-s tick). */
    excessPerOp: number;
    /** Commands per call put down to the idle background: at 0.01 or more, per-call commands could hide in it. */
    backgroundAllowedPerOp: number;
  };
  idle: {
    settleMs: number;
    seconds: number;
    redis: RedisDelta;
    perSecond: number;
    /** Commands per second by name, most frequent first (all of them). */
    top: Array<{ name: string; perSecond: number }>;
  };
  replicaStats: ScaleReplica[];
  /** The upstream's own counts (its /__stats) at the end: initialize over the phase, sessions and GET streams open. */
  upstream: { initialize: number; sessionsOpen?: number; getStreamsOpen?: number };
  wallSeconds: number;
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
  memory?: MemoryResult | { error: string };
  cold?: ColdCall[] | { error: string };
  profile?: ProfileSummary & { what: string; cpuUsPerOp: number; file: string };
  scale?: Array<ScaleRun | { phase: ScaleRun['phase']; sessions: number; error: string }>;
  targets: TargetRow[];
}
