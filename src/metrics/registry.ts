// Every Prometheus metric Causeway exports, declared in one place with bounded label sets.
// Labels never carry session ids, tokens or principals; `name` only takes what the upstream
// listed (see names.ts), everything else is `_other`.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Replica-wide levels read at scrape time. */
export interface Probes {
  /** Multi-round calls held open upstream between rounds (HeldCalls.size). */
  pendingCalls(): number;
  /** subscriptions/listen streams open. */
  listenStreams(): number;
  /** Tasks followed on their upstream or held as calls (TaskBridge.followedCount). */
  tasksFollowed(): number;
  /** Distinct name conflicts found so far, per federated mount path. */
  federationConflicts(): Array<[string, number]>;
  /** Client connections open on the data port. */
  openConnections(): number;
  /** Requests this replica is serving, its own and those handed to it. */
  inFlight(): number;
  /** Upstream sessions in this replica's pool. */
  pooledSessions(): Array<[string, number]>;
  /** Whether the session store answers (the memory store always does). */
  storeUp(): boolean;
  /** Bytes the gateway cache holds on this replica, by method and scope. */
  cacheBytes(): Array<[string, string, number]>;
  /** Requests by clientInfo name, version and revision: the busiest 50, the rest as `_other` (status/traffic.ts). */
  clients?(): Array<[string, string, string, number]>;
}

/** What build is running, for the causeway_build_info series. */
export interface BuildInfo {
  version: string;
  /** The hash of the configuration it starts with. */
  config?: string;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createMetrics(probes: Probes, build: BuildInfo = { version: 'unknown' }) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const buildInfo = new Gauge({
    name: 'causeway_build_info',
    help: "Always 1; its labels name the running version, Node.js and the configuration's hash (a reload changes it).",
    labelNames: ['version', 'node', 'config'] as const,
    registers: [registry],
  });
  let running = build.config ?? '';
  buildInfo.labels(build.version, process.version, running).set(1);
  /** The configuration a reload applied: the series names its hash. */
  const configApplied = (hash: string) => {
    buildInfo.remove(build.version, process.version, running);
    running = hash;
    buildInfo.labels(build.version, process.version, hash).set(1);
  };
  const configReloads = new Counter({
    name: 'causeway_config_reloads_total',
    help:
      'Reloads of the configuration (SIGHUP or a change of the ' +
      '--config file), by result: applied, unchanged or invalid.',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  // Declared area by area, in the order /metrics lists them.
  return {
    registry,
    buildInfo,
    configApplied,
    /** The hash of the configuration running now. */
    runningConfig: () => running,
    configReloads,
    ...servingMetrics(registry, probes),
    ...modernMetrics(registry, probes),
    ...sessionMetrics(registry, probes),
    ...connectionMetrics(registry, probes),
    ...cacheMetrics(registry, probes),
  };
}

/** What the front door serves, and the levels of the replica that serves it. */
function servingMetrics(registry: Registry, probes: Probes) {
  return {
    requestsInFlight: new Gauge({
      name: 'causeway_requests_in_flight',
      help: 'Requests this replica is serving, its own and those handed to it.',
      registers: [registry],
      collect() {
        this.set(probes.inFlight());
      },
    }),
    pooledSessions: new Gauge({
      name: 'causeway_pooled_sessions',
      help: "Upstream sessions in this replica's pool, by upstream.",
      labelNames: ['upstream'] as const,
      registers: [registry],
      collect() {
        for (const [upstream, n] of probes.pooledSessions()) this.labels(upstream).set(n);
      },
    }),
    storeUp: new Gauge({
      name: 'causeway_session_store_up',
      help: '1 while the session store answers, 0 while the pool works around it.',
      registers: [registry],
      collect() {
        this.set(probes.storeUp() ? 1 : 0);
      },
    }),
    requests: new Counter({
      name: 'causeway_requests_total',
      help:
        'MCP requests answered, by era (modern, legacy, rejected), method ' +
        'and outcome (ok, client_error, server_error by HTTP status).',
      labelNames: ['era', 'method', 'outcome'] as const,
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'causeway_request_duration_seconds',
      help: 'Time from request to final answer, by era and method.',
      labelNames: ['era', 'method'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    clientRequests: new Counter({
      name: 'causeway_client_requests_total',
      help:
        'MCP requests by the clientInfo name and version the client gave (every modern request, a legacy ' +
        'initialize) and the revision it spoke: the 50 busiest on this replica, the rest as client _other.',
      labelNames: ['client', 'version', 'revision'] as const,
      registers: [registry],
      collect() {
        if (!probes.clients) return;
        this.reset();
        for (const [client, version, revision, n] of probes.clients()) this.labels(client, version, revision).inc(n);
      },
    }),
    clientRevisions: new Counter({
      name: 'causeway_client_revision_requests_total',
      help: 'MCP requests by the protocol revision the client spoke (a known revision, none, or _other), by era.',
      labelNames: ['era', 'revision'] as const,
      registers: [registry],
    }),
  };
}

/** Modern requests, their upstream calls, multi-round asks, tasks and listen streams. */
function modernMetrics(registry: Registry, probes: Probes) {
  return {
    modernRequests: new Counter({
      name: 'causeway_modern_requests_total',
      help:
        'Modern (2026-07-28) requests answered, by upstream, method, name, result_type (complete, ' +
        'input_required, task, error) and outcome (ok, upstream_error, cancelled, or the local error reason).',
      labelNames: ['upstream', 'method', 'name', 'result_type', 'outcome'] as const,
      registers: [registry],
    }),
    modernDuration: new Histogram({
      name: 'causeway_modern_request_duration_seconds',
      help:
        'Time a modern request took from classification to the end ' +
        'of its answer, by upstream, method, name and result_type.',
      labelNames: ['upstream', 'method', 'name', 'result_type'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    upstreamDuration: new Histogram({
      name: 'causeway_upstream_request_duration_seconds',
      help:
        'Time the upstream took to answer one request Causeway sent, by upstream, legacy method and result ' +
        '(ok, error, failed, cancelled). Calls that waited on the client (multi-round asks) are left out.',
      labelNames: ['upstream', 'method', 'result'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    mrtrRounds: new Counter({
      name: 'causeway_mrtr_rounds_total',
      help: 'input_required rounds sent to clients, by upstream and method.',
      labelNames: ['upstream', 'method'] as const,
      registers: [registry],
    }),
    mrtrRetries: new Counter({
      name: 'causeway_mrtr_retries_total',
      help:
        'Multi-round retries carrying a requestState, by how they were served: held (the call was ' +
        'held here), handoff (sent to the holding replica), resume (holder gone, the call taken up ' +
        'on its upstream stream), replay (holder gone, call replayed), reissue (url elicitation).',
      labelNames: ['upstream', 'method', 'via'] as const,
      registers: [registry],
    }),
    outsideAsks: new Counter({
      name: 'causeway_outside_asks_total',
      help:
        "Server->client requests that came on a session's GET stream, outside any call, by " +
        'upstream and outcome: given (to the one multi-round call in flight, on this ' +
        'replica), handed (to it, on another replica), refused (no single call could take it).',
      labelNames: ['upstream', 'outcome'] as const,
      registers: [registry],
    }),
    pendingCalls: new Gauge({
      name: 'causeway_mrtr_pending_calls',
      help: 'Multi-round calls this replica holds open upstream between rounds.',
      registers: [registry],
      collect() {
        this.set(probes.pendingCalls());
      },
    }),
    tasksFollowed: new Gauge({
      name: 'causeway_tasks_followed',
      help:
        'Tasks this replica follows on their upstream (tasks/result open) ' +
        'or holds as calls (upstream.taskTools, upstream.taskSupport).',
      registers: [registry],
      collect() {
        this.set(probes.tasksFollowed());
      },
    }),
    listenStreams: new Gauge({
      name: 'causeway_listen_streams',
      help: 'subscriptions/listen streams open on this replica.',
      registers: [registry],
      collect() {
        this.set(probes.listenStreams());
      },
    }),
  };
}

/** Upstream sessions: their handshakes, the pool and its store, URL ejections, federation conflicts. */
function sessionMetrics(registry: Registry, probes: Probes) {
  return {
    sessionInitializations: new Counter({
      name: 'causeway_upstream_initialize_total',
      help: 'Upstream initialize handshakes, by reason (new, expired).',
      labelNames: ['upstream', 'reason'] as const,
      registers: [registry],
    }),
    initializeDuration: new Histogram({
      name: 'causeway_upstream_initialize_duration_seconds',
      help: 'Time an upstream initialize handshake took.',
      labelNames: ['upstream'] as const,
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    }),
    poolLookups: new Counter({
      name: 'causeway_session_pool_lookups_total',
      help: 'Session pool lookups answered from this replica (hit) or not (miss).',
      labelNames: ['upstream', 'result'] as const,
      registers: [registry],
    }),
    storeErrors: new Counter({
      name: 'causeway_session_store_errors_total',
      help: 'Failed session store (Redis) commands, by operation; requests carry on with replica-local sessions.',
      labelNames: ['op'] as const,
      registers: [registry],
    }),
    ejections: new Counter({
      name: 'causeway_upstream_ejections_total',
      help:
        "Times one of an upstream's URLs was ejected after failing to be " +
        'reached, by upstream and target (its position in the URL list).',
      labelNames: ['upstream', 'target'] as const,
      registers: [registry],
    }),
    federationConflicts: new Gauge({
      name: 'causeway_federation_conflicts',
      help: 'Distinct tool, prompt or resource names two members of a federated mount both expose, by mount path.',
      labelNames: ['mount'] as const,
      registers: [registry],
      collect() {
        for (const [mount, n] of probes.federationConflicts()) this.labels(mount).set(n);
      },
    }),
  };
}

/** Client connections, upstream processes and streams, auth refusals and upstream eras. */
function connectionMetrics(registry: Registry, probes: Probes) {
  return {
    connectionsOpen: new Gauge({
      name: 'causeway_connections_open',
      help: 'Client connections open on the data port.',
      registers: [registry],
      collect() {
        this.set(probes.openConnections());
      },
    }),
    connectionsClosed: new Counter({
      name: 'causeway_connections_closed_total',
      help:
        'Client connections Causeway closed itself, by reason: max_connections (refused at once), ' +
        'headers_timeout (no request head, first HTTP/2 stream or TLS handshake in time), idle_timeout.',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    upstreamProcesses: new Gauge({
      name: 'causeway_upstream_processes',
      help: 'Child processes running for a stdio upstream on this replica (one per pooled session), by upstream.',
      labelNames: ['upstream'] as const,
      registers: [registry],
    }),
    processRestarts: new Counter({
      name: 'causeway_upstream_process_restarts_total',
      help:
        'Child processes of a stdio upstream started after one was ' +
        'lost (it exited, crashed or broke the framing), by upstream.',
      labelNames: ['upstream'] as const,
      registers: [registry],
    }),
    streamDrops: new Counter({
      name: 'causeway_upstream_stream_drops_total',
      help:
        'SSE streams of HTTP+SSE upstream sessions that ended without Causeway ' +
        'closing them (the server closed them, the connection dropped), by upstream.',
      labelNames: ['upstream'] as const,
      registers: [registry],
    }),
    notificationDrops: new Counter({
      name: 'causeway_notifications_dropped_total',
      help:
        "Progress and log notifications not delivered because the client's Accept " +
        'listed only application/json, by upstream and kind (progress, log).',
      labelNames: ['upstream', 'kind'] as const,
      registers: [registry],
    }),
    authFailures: new Counter({
      name: 'causeway_auth_failures_total',
      help:
        'Requests the resource server refused, by reason: missing_token, malformed_token, ' +
        'bad_signature, unknown_key, disallowed_algorithm, expired, not_yet_valid, ' +
        'wrong_issuer, wrong_audience, missing_subject, bound_token, the dpop_* proof failures, ' +
        'inactive, unavailable (401 but unavailable: 503) or insufficient_scope (403).',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    asksOutside: new Gauge({
      name: 'causeway_upstream_asks_outside_calls',
      help:
        'Whether each upstream was seen asking outside a call (1, learned on any replica): under ' +
        'upstream.standingStream=auto the GET streams of its sessions whose clients can be asked are held.',
      labelNames: ['upstream'] as const,
      registers: [registry],
    }),
    upstreamEra: new Gauge({
      name: 'causeway_upstream_era',
      help:
        'The protocol era each upstream speaks, as found or ' +
        'configured: 1 for its era (legacy or modern), 0 for the other.',
      labelNames: ['upstream', 'era'] as const,
      registers: [registry],
    }),
  };
}

/** The gateway cache, and sessions opened replica-local. */
function cacheMetrics(registry: Registry, probes: Probes) {
  return {
    cacheHits: new Counter({
      name: 'causeway_cache_hits_total',
      help: 'Requests the gateway cache answered without the upstream, by method and scope (public, private).',
      labelNames: ['method', 'scope'] as const,
      registers: [registry],
    }),
    cacheMisses: new Counter({
      name: 'causeway_cache_misses_total',
      help: 'Cacheable requests the gateway cache could not answer (they went upstream), by method.',
      labelNames: ['method'] as const,
      registers: [registry],
    }),
    cacheDrops: new Counter({
      name: 'causeway_cache_drops_total',
      help:
        'Gateway cache entries dropped, by method, scope and reason: invalidated (a ' +
        'change notification or a replaced session), evicted (to make room), expired.',
      labelNames: ['method', 'scope', 'reason'] as const,
      registers: [registry],
    }),
    cacheBytes: new Gauge({
      name: 'causeway_cache_bytes',
      help: 'Bytes the gateway cache holds on this replica (about), by method and scope.',
      labelNames: ['method', 'scope'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [method, scope, n] of probes.cacheBytes()) this.labels(method, scope).set(n);
      },
    }),
    quotaCalls: new Counter({
      name: 'causeway_quota_calls_total',
      help: 'Calls counted against a quota, by quota (quotas.rules); refused calls are not counted.',
      labelNames: ['quota'] as const,
      registers: [registry],
    }),
    quotaRefusals: new Counter({
      name: 'causeway_quota_refusals_total',
      help: 'Calls refused with 429 because a quota of their tenant was spent, by quota.',
      labelNames: ['quota'] as const,
      registers: [registry],
    }),
    localSessions: new Counter({
      name: 'causeway_session_local_total',
      help: 'Upstream sessions opened replica-local because the shared store was unavailable.',
      labelNames: ['upstream'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
