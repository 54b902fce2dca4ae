// What the hot paths call to record: the front door once per MCP request, the pipeline once per
// modern answer, the upstream client once per upstream request, the bridge once per round and
// retry. Label values are bounded here; children are cached, so recording allocates no label
// object per request.

import type { Counter, Histogram } from 'prom-client';
import { LEGACY_METHODS } from '../envelope/index.js';
import type { ErrorReason } from '../errors.js';
import type { JsonObject } from '../jsonrpc.js';
import { operationDone } from '../tracing/index.js';
import {
  boundCounter,
  boundHistogram,
  type CounterChild as Bound,
  type HistogramChild as BoundHistogram,
} from './bound.js';
import { Children } from './children.js';
import { KnownNames } from './names.js';
import type { Metrics } from './registry.js';
import type { CacheRecorder, CacheScope, DropReason, OutsideAskOutcome, RetryVia } from './labels.js';

export type ResultType = 'complete' | 'input_required' | 'task' | 'error';
/** ok: a result; upstream_error: the upstream's own JSON-RPC error, relayed; cancelled: the client went away first. */
export type AnswerOutcome = 'ok' | 'upstream_error' | 'cancelled' | ErrorReason;
export type UpstreamResult = 'ok' | 'error' | 'failed' | 'cancelled';

type CounterChild = Counter.Internal;
type HistogramChild = Histogram.Internal<string>;

/** Front-door metrics: every MCP request, whatever its era. */
export class RequestMetrics {
  private readonly requests: Children<Bound>;
  private readonly durations: Children<BoundHistogram>;
  private readonly revisions: Children<Bound>;

  constructor(m: Metrics) {
    this.requests = new Children((v) => boundCounter(m.requests, v));
    this.durations = new Children((v) => boundHistogram(m.requestDuration, v));
    this.revisions = new Children((v) => boundCounter(m.clientRevisions, v));
  }

  /** `method` and `revision` are already bounded by the front door. */
  request(era: string, method: string, status: number, revision: string, seconds: number): void {
    const outcome = status < 400 ? 'ok' : status < 500 ? 'client_error' : 'server_error';
    this.requests.get(era, method, outcome).inc();
    this.durations.get(era, method).observe(seconds);
    this.revisions.get(era, revision).inc();
  }
}

/** Metrics of one upstream: modern answers by method and name, upstream latency, multi-round. */
export class UpstreamMetrics {
  /** The `name` label's bounded vocabulary, learned from this upstream's list results. */
  readonly names = new KnownNames();
  private readonly answers: Children<Bound>;
  private readonly answerDurations: Children<BoundHistogram>;
  private readonly calls: Children<BoundHistogram>;
  private readonly rounds: Children<CounterChild>;
  private readonly retries: Children<CounterChild>;
  private readonly outside: Children<CounterChild>;
  private readonly initializations: Children<CounterChild>;
  private readonly initializeDuration: HistogramChild;
  private readonly lookups: Children<Bound>;
  private readonly ejections: Children<CounterChild>;
  private readonly localSessions: CounterChild;
  private readonly eras: { legacy: { set(n: number): void }; modern: { set(n: number): void } };
  private readonly processCount: { set(n: number): void };
  private readonly restarts: CounterChild;
  private readonly asking: { set(n: number): void };
  private readonly drops: CounterChild;
  private readonly notificationDrops: Children<CounterChild>;

  constructor(
    m: Metrics,
    private readonly upstream: string,
  ) {
    this.answers = new Children((v) => boundCounter(m.modernRequests, [upstream, ...v]));
    this.answerDurations = new Children((v) => boundHistogram(m.modernDuration, [upstream, ...v]));
    this.calls = new Children((v) => boundHistogram(m.upstreamDuration, [upstream, ...v]));
    this.rounds = new Children((v) => m.mrtrRounds.labels(upstream, ...v));
    this.retries = new Children((v) => m.mrtrRetries.labels(upstream, ...v));
    this.outside = new Children((v) => m.outsideAsks.labels(upstream, ...v));
    this.initializations = new Children((v) => m.sessionInitializations.labels(upstream, ...v));
    this.initializeDuration = m.initializeDuration.labels(upstream);
    this.lookups = new Children((v) => boundCounter(m.poolLookups, [upstream, ...v]));
    this.ejections = new Children((v) => m.ejections.labels(upstream, ...v));
    this.localSessions = m.localSessions.labels(upstream);
    this.eras = { legacy: m.upstreamEra.labels(upstream, 'legacy'), modern: m.upstreamEra.labels(upstream, 'modern') };
    this.processCount = m.upstreamProcesses.labels(upstream);
    this.restarts = m.processRestarts.labels(upstream);
    this.asking = m.asksOutside.labels(upstream);
    this.drops = m.streamDrops.labels(upstream);
    this.notificationDrops = new Children((v) => m.notificationDrops.labels(upstream, ...v));
  }

  /** Told the names this replica learns first, for the replicas that did not read the list (cache/catalog.ts). */
  onLearned: ((method: string, items: readonly string[]) => void) | undefined;

  /** A tools/list, prompts/list or resources/templates/list page the upstream returned. */
  learn(method: string, result: JsonObject): void {
    const added = this.names.learn(method, result);
    if (added.length > 0) this.onLearned?.(method, added);
  }

  /**
   * A modern request answered; `method` is one of the modern registry, `name` its params.name / uri;
   * `shown`, the name a mount's view shows for it (its label when `name` is one the upstream listed).
   */
  answered(
    method: string,
    name: string | undefined,
    resultType: ResultType,
    outcome: AnswerOutcome,
    seconds: number,
    shown?: string,
  ): void {
    const known = this.names.label(method, name);
    const label = shown !== undefined && known === name ? shown : known;
    this.answers.get(method, label, resultType, outcome).inc();
    this.answerDurations.get(method, label, resultType).observe(seconds);
    operationDone(this.upstream, method, label, outcome, seconds);
    if (resultType === 'input_required') this.rounds.get(method).inc();
  }

  /** One request Causeway sent upstream answered (or failed). */
  upstreamCall(method: string, result: UpstreamResult, seconds: number): void {
    this.calls.get(LEGACY_METHODS.has(method) ? method : 'other', result).observe(seconds);
  }

  retry(method: string, via: RetryVia): void {
    this.retries.get(method, via).inc();
  }

  outsideAsk(outcome: OutsideAskOutcome): void {
    this.outside.get(outcome).inc();
  }

  /** The upstream was seen asking outside a call, here or on another replica. */
  asksOutside(): void {
    this.asking.set(1);
  }

  /** An upstream initialize handshake; `reason` and `op` below are the pool's own fixed words. */
  initialized(reason: string, seconds: number): void {
    this.initializations.get(reason).inc();
    this.initializeDuration.observe(seconds);
  }

  poolLookup(result: 'hit' | 'miss'): void {
    this.lookups.get(result).inc();
  }

  /** `target` is the URL's position in the upstream's list: bounded by the config. */
  ejected(target: number): void {
    this.ejections.get(String(target)).inc();
  }

  /** The era the upstream speaks, once known (upstream.era, or found by its probe). */
  era(era: 'legacy' | 'modern'): void {
    this.eras.legacy.set(era === 'legacy' ? 1 : 0);
    this.eras.modern.set(era === 'modern' ? 1 : 0);
  }

  localSession(): void {
    this.localSessions.inc();
  }

  /** Child processes of a stdio upstream running now. */
  processes(n: number): void {
    this.processCount.set(n);
  }

  processRestarted(): void {
    this.restarts.inc();
  }

  /** An HTTP+SSE session's stream ended without us closing it. */
  streamDropped(): void {
    this.drops.inc();
  }

  /** A progress or log notification for a client whose Accept took JSON only. */
  notificationDropped(kind: 'progress' | 'log'): void {
    this.notificationDrops.get(kind).inc();
  }
}

/** The gateway cache's hits, misses and drops; methods are the six cacheable ones, scopes public and private. */
export class CacheMetrics implements CacheRecorder {
  private readonly hits: Children<CounterChild>;
  private readonly misses: Children<CounterChild>;
  private readonly drops: Children<CounterChild>;

  constructor(m: Metrics) {
    this.hits = new Children((v) => m.cacheHits.labels(...v));
    this.misses = new Children((v) => m.cacheMisses.labels(...v));
    this.drops = new Children((v) => m.cacheDrops.labels(...v));
  }

  hit(method: string, scope: CacheScope): void {
    this.hits.get(method, scope).inc();
  }

  miss(method: string): void {
    this.misses.get(method).inc();
  }

  dropped(method: string, scope: CacheScope, why: DropReason): void {
    this.drops.get(method, scope, why).inc();
  }
}

/**
 * A counter by one label of a closed set: the shared session store's failures by the pool's fixed words for
 * its operations (it serves every upstream), the resource server's refusals by reason (auth/grant.ts).
 */
export class CountsBy<L extends string> {
  private readonly children: Children<CounterChild>;

  constructor(counter: { labels(...values: string[]): CounterChild }) {
    this.children = new Children((v) => counter.labels(...v));
  }

  count(label: L): void {
    this.children.get(label).inc();
  }
}
