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

/**
 * One revision, upstream and era's requests: since start, and per second over the last minute
 * (slot `second % WINDOW_SECONDS` counts the second it is stamped with; a stale one starts again).
 */
class Counted {
  requests = 0;
  private readonly seconds = new Float64Array(WINDOW_SECONDS).fill(-1);
  private readonly counts = new Float64Array(WINDOW_SECONDS);

  constructor(
    readonly clientRevision: string,
    readonly upstream: string,
    readonly upstreamEra: TrafficEra,
  ) {}

  add(second: number): void {
    this.requests += 1;
    const i = second % WINDOW_SECONDS;
    if (this.seconds[i] === second) this.counts[i]! += 1;
    else {
      this.seconds[i] = second;
      this.counts[i] = 1;
    }
  }

  /** The requests counted in the seconds after `from`. */
  since(from: number): number {
    let n = 0;
    for (let i = 0; i < WINDOW_SECONDS; i++) if (this.seconds[i]! > from) n += this.counts[i]!;
    return n;
  }
}

/**
 * Counted in place: a request finds its rows by the strings it came with, through maps keyed by
 * each (no key made per request), and adds to them.
 */
export class Traffic {
  /** revision -> upstream -> one row per era seen; and every row, in the order first counted. */
  private readonly counted = new Map<string, Map<string, Counted[]>>();
  private readonly all: Counted[] = [];
  /** name -> version -> revision -> row, at most MAX_CLIENTS rows; the rest by revision. */
  private readonly clients = new Map<string, Map<string, Map<string, ClientRow>>>();
  private readonly named: ClientRow[] = [];
  private readonly other = new Map<string, ClientRow>();

  /** `eraOf` names an upstream's era when a request is counted (read then, as it may be found late). */
  constructor(
    private readonly eraOf: (upstream: string) => TrafficEra,
    private readonly now: () => number = Date.now,
  ) {}

  /** One request answered: `revision` is bounded already, `upstream` a configured name or a federated mount. */
  record(revision: string, upstream: string, client: ClientInfo | undefined): void {
    this.row(revision, upstream, this.eraOf(upstream)).add(Math.floor(this.now() / 1000));
    if (client) this.client(client, revision);
  }

  private row(revision: string, upstream: string, era: TrafficEra): Counted {
    let byUpstream = this.counted.get(revision);
    if (byUpstream === undefined) this.counted.set(revision, (byUpstream = new Map()));
    let rows = byUpstream.get(upstream);
    if (rows === undefined) byUpstream.set(upstream, (rows = []));
    for (const r of rows) if (r.upstreamEra === era) return r;
    const r = new Counted(revision, upstream, era);
    rows.push(r);
    this.all.push(r);
    return r;
  }

  private client(info: ClientInfo, revision: string): void {
    const name = info.name.slice(0, MAX_CHARS);
    const version = info.version.slice(0, MAX_CHARS);
    let versions = this.clients.get(name);
    let revisions = versions?.get(version);
    let row = revisions?.get(revision);
    if (row === undefined && this.named.length < MAX_CLIENTS) {
      if (versions === undefined) this.clients.set(name, (versions = new Map()));
      if (revisions === undefined) versions.set(version, (revisions = new Map()));
      row = { name, version, revision, requests: 0 };
      revisions.set(revision, row);
      this.named.push(row);
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
    return this.all.map((r) => ({
      clientRevision: r.clientRevision,
      upstream: r.upstream,
      upstreamEra: r.upstreamEra,
      lastMinute: r.since(from),
      requests: r.requests,
    }));
  }

  /** The busiest TOP_CLIENTS clients by name, version and revision, the rest summed as `_other` by revision. */
  clientRows(): ClientRow[] {
    return busiest([...this.named, ...this.other.values()]);
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
