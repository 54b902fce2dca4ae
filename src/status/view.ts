// The status page's view (/status.json): the parts of every live replica summed. The replica
// answering reads its own part fresh and the others' as they last published it (one beat old at
// most). Upstreams are merged by name (the era this replica knows first, a URL's worst health on
// any replica), traffic and clients summed by their keys, clients cut again to the busiest.

import type { ReplicaPart, ReplicaRow, SkillsRow, UpstreamRow, UrlState } from './part.js';
import { busiest, type ClientRow, type TrafficRow } from './traffic.js';

export interface StatusView {
  generatedAt: string;
  /** The replica that answered. */
  replica: string;
  store: string;
  /** With Redis: the other replicas' parts could not be read (this replica's alone is shown). */
  partial: boolean;
  replicas: Array<ReplicaRow & { self: boolean }>;
  upstreams: UpstreamRow[];
  traffic: TrafficRow[];
  clients: ClientRow[];
  totals: Omit<ReplicaRow, 'id' | 'version' | 'config' | 'started' | 'draining'>;
  skills: SkillsRow[];
}

const WORST: readonly UrlState[] = ['up', 'failing', 'ejected'];

export function statusView(self: ReplicaPart, others: readonly ReplicaPart[], store: string, partial = false) {
  const parts = [self, ...others.filter((p) => p.replica.id !== self.replica.id)];
  const replicas = parts
    .map((p) => ({ ...p.replica, self: p === self }))
    .sort((a, b) => Number(b.self) - Number(a.self) || a.started.localeCompare(b.started));
  const view: StatusView = {
    generatedAt: new Date().toISOString(),
    replica: self.replica.id,
    store,
    partial,
    replicas,
    upstreams: mergeUpstreams(parts),
    traffic: mergeTraffic(parts),
    clients: busiest(
      sumBy(
        parts.flatMap((p) => p.clients),
        (c) => [c.name, c.version, c.revision],
      ),
    ),
    totals: totals(replicas),
    skills: self.skills,
  };
  return view;
}

function mergeUpstreams(parts: readonly ReplicaPart[]): UpstreamRow[] {
  const byName = new Map<string, UpstreamRow>();
  for (const p of parts) {
    for (const u of p.upstreams) {
      const seen = byName.get(u.name);
      if (seen === undefined) {
        byName.set(u.name, { ...u, urls: u.urls.map((x) => ({ ...x })) });
        continue;
      }
      if (seen.era === 'unknown' && u.era !== 'unknown') Object.assign(seen, { era: u.era, eraFound: u.eraFound });
      if (seen.transport.endsWith('not yet found')) seen.transport = u.transport;
      seen.pooledSessions += u.pooledSessions;
      for (const x of u.urls) {
        const url = seen.urls.find((y) => y.url === x.url);
        if (url === undefined) continue;
        if (WORST.indexOf(x.state) > WORST.indexOf(url.state)) url.state = x.state;
        url.ejectedOn += x.ejectedOn;
      }
    }
  }
  return [...byName.values()];
}

function mergeTraffic(parts: readonly ReplicaPart[]): TrafficRow[] {
  const rows = new Map<string, TrafficRow>();
  for (const r of parts.flatMap((p) => p.traffic)) {
    const key = [r.clientRevision, r.upstream, r.upstreamEra].join('\n');
    const seen = rows.get(key);
    if (seen) {
      seen.requests += r.requests;
      seen.lastMinute += r.lastMinute;
    } else rows.set(key, { ...r });
  }
  return [...rows.values()].sort(
    (a, b) =>
      a.upstream.localeCompare(b.upstream) ||
      a.clientRevision.localeCompare(b.clientRevision) ||
      a.upstreamEra.localeCompare(b.upstreamEra),
  );
}

function sumBy(rows: readonly ClientRow[], key: (r: ClientRow) => string[]): ClientRow[] {
  const sums = new Map<string, ClientRow>();
  for (const r of rows) {
    const k = key(r).join('\n');
    const seen = sums.get(k);
    if (seen) seen.requests += r.requests;
    else sums.set(k, { ...r });
  }
  return [...sums.values()];
}

function totals(replicas: readonly ReplicaRow[]): StatusView['totals'] {
  const sum = (f: (r: ReplicaRow) => number) => replicas.reduce((a, r) => a + f(r), 0);
  return {
    inFlight: sum((r) => r.inFlight),
    pooledSessions: sum((r) => r.pooledSessions),
    standingStreams: sum((r) => r.standingStreams),
    heldCalls: sum((r) => r.heldCalls),
    listens: sum((r) => r.listens),
    tasks: sum((r) => r.tasks),
    cache: {
      hits: sum((r) => r.cache.hits),
      misses: sum((r) => r.cache.misses),
      bytes: sum((r) => r.cache.bytes),
    },
  };
}

/** A part another replica published, if it reads as one (a replica of another version may differ). */
export function readPart(text: string | null): ReplicaPart | undefined {
  if (text === null) return undefined;
  try {
    const p = JSON.parse(text) as Partial<ReplicaPart>;
    const ok =
      typeof p.replica?.id === 'string' &&
      Array.isArray(p.upstreams) &&
      Array.isArray(p.traffic) &&
      Array.isArray(p.clients) &&
      Array.isArray(p.skills);
    return ok ? (p as ReplicaPart) : undefined;
  } catch {
    return undefined;
  }
}
