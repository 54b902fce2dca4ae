// What the status page counts itself: each MCP request the front door answered, by the revision
// the client spoke, the upstream it went to and that upstream's era (over the last minute and
// since start), and by the client's clientInfo name and version. Every key is bounded: revisions
// are the front door's bounded label, upstreams the configured ones, eras three words; clients
// are kept up to MAX_CLIENTS rows, and any past that count as `_other`. Nothing else of a
// request is kept: no token, session, principal or argument.

/** The clients shown and exported by name: the busiest this many; the rest are `_other`. */
export const TOP_CLIENTS = 50;
/** Rows kept per replica before new clients count as `_other`. */
const MAX_CLIENTS = 1000;
/** Longest client name or version kept: a client chooses them. */
const MAX_CHARS = 64;
/** The name (and version) of the clients not shown by name. */
export const OTHER = '_other';
const WINDOW_SECONDS = 60;

/** An upstream's era as the traffic counts it: unknown until found, federated for a federated mount. */
export type TrafficEra = 'legacy' | 'modern' | 'unknown' | 'federated';

export interface TrafficRow {
  clientRevision: string;
  upstream: string;
  upstreamEra: TrafficEra;
  lastMinute: number;
  requests: number;
}

export interface ClientRow {
  name: string;
  version: string;
  revision: string;
  requests: number;
}

/** What a client says it is (clientInfo), as the front door read it. */
export interface ClientInfo {
  name: string;
  version: string;
}

interface Slot {
  second: number;
  counts: Map<string, number>;
}

const SEP = '\n';

export class Traffic {
  private readonly total = new Map<string, number>();
  private readonly slots: Slot[] = Array.from({ length: WINDOW_SECONDS }, () => ({ second: -1, counts: new Map() }));
  private readonly clients = new Map<string, ClientRow>();
  private readonly other = new Map<string, ClientRow>();

  /** `eraOf` names an upstream's era when a request is counted (read then, as it may be found late). */
  constructor(
    private readonly eraOf: (upstream: string) => TrafficEra,
    private readonly now: () => number = Date.now,
  ) {}

  /** One request answered: `revision` is bounded already, `upstream` a configured name or a federated mount. */
  record(revision: string, upstream: string, client: ClientInfo | undefined): void {
    const key = `${revision}${SEP}${upstream}${SEP}${this.eraOf(upstream)}`;
    this.total.set(key, (this.total.get(key) ?? 0) + 1);
    const second = Math.floor(this.now() / 1000);
    const slot = this.slots[second % WINDOW_SECONDS]!;
    if (slot.second !== second) {
      slot.second = second;
      slot.counts.clear();
    }
    slot.counts.set(key, (slot.counts.get(key) ?? 0) + 1);
    if (client) this.client(client, revision);
  }

  private client(info: ClientInfo, revision: string): void {
    const name = info.name.slice(0, MAX_CHARS);
    const version = info.version.slice(0, MAX_CHARS);
    const key = `${name}${SEP}${version}${SEP}${revision}`;
    let row = this.clients.get(key);
    if (row === undefined && this.clients.size < MAX_CLIENTS) {
      row = { name, version, revision, requests: 0 };
      this.clients.set(key, row);
    }
    if (row === undefined) {
      row = this.other.get(revision) ?? { name: OTHER, version: OTHER, revision, requests: 0 };
      this.other.set(revision, row);
    }
    row.requests += 1;
  }

  /** Requests by revision, upstream and era, since start and over the last minute. */
  rows(): TrafficRow[] {
    const from = Math.floor(this.now() / 1000) - WINDOW_SECONDS;
    const minute = new Map<string, number>();
    for (const slot of this.slots) {
      if (slot.second <= from) continue;
      for (const [key, n] of slot.counts) minute.set(key, (minute.get(key) ?? 0) + n);
    }
    return [...this.total].map(([key, requests]) => {
      const [clientRevision, upstream, upstreamEra] = key.split(SEP) as [string, string, TrafficEra];
      return { clientRevision, upstream, upstreamEra, lastMinute: minute.get(key) ?? 0, requests };
    });
  }

  /** The busiest TOP_CLIENTS clients by name, version and revision, the rest summed as `_other` by revision. */
  clientRows(): ClientRow[] {
    return busiest([...this.clients.values(), ...this.other.values()]);
  }
}

/** The TOP_CLIENTS busiest rows (`_other` rows never among them), the rest summed into `_other` by revision. */
export function busiest(rows: readonly ClientRow[]): ClientRow[] {
  const named = rows.filter((r) => r.name !== OTHER).sort((a, b) => b.requests - a.requests || order(a, b));
  const other = new Map<string, ClientRow>();
  for (const r of [...named.slice(TOP_CLIENTS), ...rows.filter((r) => r.name === OTHER)]) {
    const o = other.get(r.revision) ?? { name: OTHER, version: OTHER, revision: r.revision, requests: 0 };
    o.requests += r.requests;
    other.set(r.revision, o);
  }
  return [...named.slice(0, TOP_CLIENTS).map((r) => ({ ...r })), ...[...other.values()].sort(order)];
}

function order(a: ClientRow, b: ClientRow): number {
  return a.name.localeCompare(b.name) || a.version.localeCompare(b.version) || a.revision.localeCompare(b.revision);
}
