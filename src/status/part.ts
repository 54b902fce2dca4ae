// One replica's part of the status page, read from what the replica already keeps: its upstreams'
// eras and URL health, its pool, held calls, listens and tasks, the gateway cache's counters,
// the skills folders and the traffic counted at the front door. Each replica publishes its part
// (cluster.ts); the page is their sum. URLs are shown without credentials or query, stdio
// commands not at all: nothing here is a token, a session id, a principal or an argument.

import type { Metrics } from '../metrics/index.js';
import type { ClientRow, Traffic, TrafficEra, TrafficRow } from './traffic.js';

export interface ReplicaRow {
  id: string;
  version: string;
  /** The hash of the configuration it runs (a reload changes it). */
  config: string;
  /** ISO time it started. */
  started: string;
  draining: boolean;
  inFlight: number;
  pooledSessions: number;
  standingStreams: number;
  heldCalls: number;
  listens: number;
  tasks: number;
  cache: { hits: number; misses: number; bytes: number };
}

/** An upstream URL's passive health on one replica: answering, failing (not reached lately) or ejected. */
export type UrlState = 'up' | 'failing' | 'ejected';

export interface UpstreamRow {
  name: string;
  era: string;
  /** How the era was found: setting, probe, store (another replica's probe), refusal, or none yet. */
  eraFound: string;
  transport: string;
  urls: Array<{ url: string; state: UrlState; ejectedOn: number }>;
  pooledSessions: number;
}

export interface SkillsRow {
  mount: string;
  loaded: number;
  broken: number;
}

/** What one replica publishes: read back by every replica's page. */
export interface ReplicaPart {
  /** When it was made (ms since the epoch, this replica's clock). */
  at: number;
  replica: ReplicaRow;
  upstreams: UpstreamRow[];
  traffic: TrafficRow[];
  clients: ClientRow[];
  skills: SkillsRow[];
}

/** What the part is read from: the upstreams' parts, as the composition root has them. */
export interface UpstreamSource {
  spec: { name: string; transport: string; era: string };
  modern?: { era: { readonly current: string | undefined; readonly source: string | undefined } };
  targets?: { health(): Array<{ url: string; failures: number; ejectedUntil: number }> };
  found?(): string | undefined;
}

export interface PartSources {
  replicaId: string;
  version: string;
  started: Date;
  draining(): boolean;
  upstreams: ReadonlyMap<string, UpstreamSource>;
  pool: { sizeByUpstream(): ReadonlyMap<string, number> };
  held: { readonly size: number };
  subscriptions: { readonly size: number; readonly standingSize: number };
  tasks: { readonly followedCount: number };
  inFlight: { readonly count: number };
  cache: { bytesBy(): Array<[string, string, number]> } | undefined;
  metrics: Pick<Metrics, 'cacheHits' | 'cacheMisses' | 'runningConfig'>;
  skills: ReadonlyMap<string, { readonly current: { skills: { size: number }; problems: readonly string[] } }>;
  traffic: Traffic;
}

export async function replicaPart(s: PartSources): Promise<ReplicaPart> {
  const pooled = s.pool.sizeByUpstream();
  const upstreams = [...s.upstreams.values()].map((u) => upstreamRow(u, pooled.get(u.spec.name) ?? 0));
  const replica: ReplicaRow = {
    id: s.replicaId,
    version: s.version,
    config: s.metrics.runningConfig(),
    started: s.started.toISOString(),
    draining: s.draining(),
    inFlight: s.inFlight.count,
    pooledSessions: [...pooled.values()].reduce((a, b) => a + b, 0),
    standingStreams: s.subscriptions.standingSize,
    heldCalls: s.held.size,
    listens: s.subscriptions.size,
    tasks: s.tasks.followedCount,
    cache: {
      hits: await total(s.metrics.cacheHits),
      misses: await total(s.metrics.cacheMisses),
      bytes: (s.cache?.bytesBy() ?? []).reduce((a, [, , n]) => a + n, 0),
    },
  };
  const skills = [...s.skills].map(([mount, f]) => ({
    mount,
    loaded: f.current.skills.size,
    broken: f.current.problems.length,
  }));
  return { at: Date.now(), replica, upstreams, traffic: s.traffic.rows(), clients: s.traffic.clientRows(), skills };
}

/** The era requests to `name` count under: its era now, or `federated` for a federated mount's path. */
export function trafficEra(upstreams: ReadonlyMap<string, UpstreamSource>, name: string): TrafficEra {
  const u = upstreams.get(name);
  if (u === undefined) return 'federated';
  if (u.modern === undefined) return 'legacy';
  const era = u.modern.era.current;
  return era === 'legacy' || era === 'modern' ? era : 'unknown';
}

function upstreamRow(u: UpstreamSource, pooledSessions: number): UpstreamRow {
  const era = u.modern ? (u.modern.era.current ?? 'unknown') : 'legacy';
  const eraFound = u.modern ? (u.modern.era.source ?? 'not yet') : 'setting';
  const transport = u.spec.transport === 'auto' ? `auto: ${u.found?.() ?? 'not yet found'}` : u.spec.transport;
  const urls = (u.targets?.health() ?? []).map((h) => ({
    url: shownUrl(h.url),
    state: (h.ejectedUntil > 0 ? 'ejected' : h.failures > 0 ? 'failing' : 'up') as UrlState,
    ejectedOn: h.ejectedUntil > 0 ? 1 : 0,
  }));
  return { name: u.spec.name, era, eraFound, transport, urls, pooledSessions };
}

/** A URL without what may carry a secret: its user, password, query and fragment. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(unreadable URL)';
  }
}

async function total(metric: { get(): Promise<{ values: Array<{ value: number }> }> }): Promise<number> {
  return (await metric.get()).values.reduce((a, v) => a + v.value, 0);
}
