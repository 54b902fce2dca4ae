// Every Prometheus metric Causeway exports, declared in one place with bounded label sets.
// Labels never carry session ids, tokens or principals.

import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    requests: new Counter({
      name: 'causeway_requests_total',
      help: 'MCP requests answered, by era (modern, legacy, rejected), method and outcome (ok, client_error, server_error by HTTP status).',
      labelNames: ['era', 'method', 'outcome'] as const,
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'causeway_request_duration_seconds',
      help: 'Time from request to final answer, by era and method.',
      labelNames: ['era', 'method'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
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
      labelNames: ['upstream', 'op'] as const,
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
