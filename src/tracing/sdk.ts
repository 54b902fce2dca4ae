// Registers the OpenTelemetry Node SDKs at start-up when the standard OTEL_* variables ask for
// them, exporting over OTLP/HTTP (JSON): traces, and the MCP operation-duration metric. Off, none
// of an SDK is even loaded: the spans of spans.ts and the histogram of operations.ts stay no-ops.

import { diag, DiagLogLevel, metrics } from '@opentelemetry/api';
import { recordOperations } from './operations.js';
import { markTracingOn } from './spans.js';
import type { Logger } from '../log.js';
import { VERSION } from '../version.js';

export type TracingEnv = Readonly<Record<string, string | undefined>>;

/**
 * On when OTEL_TRACES_EXPORTER lists `otlp`, or, with OTEL_TRACES_EXPORTER unset, when
 * OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; OTEL_SDK_DISABLED=true
 * turns it off whatever else is set.
 */
export function tracingRequested(env: TracingEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = exporterNames(env);
  if (exporters.length > 0) return exporters.includes('otlp');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

function exporterNames(env: TracingEnv): string[] {
  return (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}

export interface Telemetry {
  /** Exports what is buffered and stops; gives up after `timeoutMs`. */
  shutdown(timeoutMs?: number): Promise<void>;
}

/**
 * OpenTelemetry metrics (mcp.server.operation.duration, beside the Prometheus registry) are on
 * only when asked for by name: OTEL_METRICS_EXPORTER lists `otlp`, or, unset, an
 * OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is given. An endpoint for everything turns on traces alone.
 */
export function metricsRequested(env: TracingEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_METRICS_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.length > 0) return exporters.includes('otlp');
  return Boolean(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT?.trim());
}

/**
 * The SDKs, registered globally, or undefined when both are off. Traces: the exporter and the
 * sampler read their own OTEL_* variables (endpoint, headers, timeout, OTEL_TRACES_SAMPLER and
 * its arg, OTEL_BSP_*). Metrics: exported every OTEL_METRIC_EXPORT_INTERVAL ms (60 s unset). The
 * service is OTEL_SERVICE_NAME, else causeway.
 */
export async function startTelemetry(env: TracingEnv, log: Logger): Promise<Telemetry | undefined> {
  const others = exporterNames(env).filter((e) => e !== 'otlp' && e !== 'none');
  if (others.length > 0)
    log.warn({ exporters: others }, 'OTEL_TRACES_EXPORTER: only otlp is supported; the others are ignored');
  const traces = tracingRequested(env);
  const meters = metricsRequested(env);
  if (!traces && !meters) return undefined;
  for (const [signal, protocol] of [
    ['traces', env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL],
    ['metrics', env.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL],
  ] as const) {
    if (protocol !== undefined && protocol.trim() !== 'http/json') {
      log.warn({ protocol, signal }, 'Causeway exports OTLP/HTTP JSON only; the protocol asked for is ignored');
    }
  }
  // The SDK's own complaints (an export refused, a collector unreachable) go to the log.
  const otel = log.child({ stage: 'tracing' });
  diag.setLogger(
    {
      error: (msg) => otel.warn(msg),
      warn: (msg) => otel.warn(msg),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    DiagLogLevel.WARN,
  );
  const { detectResources, envDetector, resourceFromAttributes } = await import('@opentelemetry/resources');
  const resource = resourceFromAttributes({ 'service.name': 'causeway', 'service.version': VERSION }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const stops: Array<() => Promise<void>> = [];
  if (traces) {
    const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }] = await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
    ]);
    const provider = new NodeTracerProvider({
      resource,
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    provider.register();
    markTracingOn();
    stops.push(() => provider.shutdown());
    log.info({ serviceName: resource.attributes['service.name'] }, 'tracing on: spans exported over OTLP/HTTP');
  }
  if (meters) {
    const [{ MeterProvider, PeriodicExportingMetricReader }, { OTLPMetricExporter }] = await Promise.all([
      import('@opentelemetry/sdk-metrics'),
      import('@opentelemetry/exporter-metrics-otlp-http'),
    ]);
    const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
    const reader = new PeriodicExportingMetricReader({
      exporter: new OTLPMetricExporter(),
      exportIntervalMillis: interval > 0 ? interval : 60_000,
    });
    const provider = new MeterProvider({ resource, readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    recordOperations();
    stops.push(() => provider.shutdown());
    log.info({ serviceName: resource.attributes['service.name'] }, 'OpenTelemetry metrics on: exported over OTLP/HTTP');
  }
  return {
    shutdown: (timeoutMs = 5_000) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          otel.warn({ timeoutMs }, 'telemetry not all exported before the drain ended');
          resolve();
        }, timeoutMs);
      });
      const done = Promise.all(
        stops.map((stop) => stop().catch((err: unknown) => otel.warn({ err }, 'exporting the last telemetry failed'))),
      );
      return Promise.race([done.then(() => undefined), late]).finally(() => clearTimeout(timer));
    },
  };
}
