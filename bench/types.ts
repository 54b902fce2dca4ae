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
  targets: TargetRow[];
}
