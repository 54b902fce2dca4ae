// mcp.server.operation.duration through the OpenTelemetry metrics API, after the OpenTelemetry
// MCP conventions, next to the Prometheus registry. Recorded only once a MeterProvider was
// registered at start-up (startTelemetry): with OpenTelemetry off, a request builds nothing here.

import { metrics, type Attributes, type Histogram } from '@opentelemetry/api';
import { MODERN_VERSION, VERSION } from '../version.js';

/** Seconds, as the conventions advise for MCP operation durations. */
const BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

let histogram: Histogram | undefined;

/** Called once a MeterProvider is registered globally. */
export function recordOperations(): void {
  histogram = metrics.getMeter('causeway', VERSION).createHistogram('mcp.server.operation.duration', {
    unit: 's',
    description: 'Duration of the MCP requests Causeway served, as its clients saw them.',
    advice: { explicitBucketBoundaries: BUCKETS },
  });
}

/**
 * One modern request answered. `name` is the bounded label the Prometheus metrics use (a listed
 * tool or prompt name, `_other` or `none`); `outcome` is `ok` or why not.
 */
export function operationDone(upstream: string, method: string, name: string, outcome: string, seconds: number): void {
  if (!histogram) return;
  const attributes: Attributes = {
    'mcp.method.name': method,
    'mcp.protocol.version': MODERN_VERSION,
    'causeway.upstream': upstream,
  };
  if (method === 'tools/call') attributes['gen_ai.tool.name'] = name;
  else if (method === 'prompts/get') attributes['gen_ai.prompt.name'] = name;
  if (outcome !== 'ok') attributes['error.type'] = outcome;
  histogram.record(seconds, attributes);
}
