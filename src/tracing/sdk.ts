// Registers the OpenTelemetry Node tracing SDK at start-up when the standard OTEL_* variables ask
// for it, exporting over OTLP/HTTP (JSON). Off, none of the SDK is even loaded: the spans of
// spans.ts stay the API's no-ops.

import { diag, DiagLogLevel } from '@opentelemetry/api';
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

export interface Tracing {
  /** Exports what is buffered and stops; gives up after `timeoutMs`. */
  shutdown(timeoutMs?: number): Promise<void>;
}

/**
 * The SDK, registered globally, or undefined when tracing is off. The exporter and the sampler
 * read their own OTEL_* variables (endpoint, headers, timeout, OTEL_TRACES_SAMPLER and its arg,
 * OTEL_BSP_*); the service is OTEL_SERVICE_NAME, else causeway.
 */
export async function startTracing(env: TracingEnv, log: Logger): Promise<Tracing | undefined> {
  const others = exporterNames(env).filter((e) => e !== 'otlp' && e !== 'none');
  if (others.length > 0) log.warn({ exporters: others }, 'OTEL_TRACES_EXPORTER: only otlp is supported; the others are ignored');
  if (!tracingRequested(env)) return undefined;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol !== undefined && protocol.trim() !== 'http/json') {
    log.warn({ protocol }, 'Causeway exports traces as OTLP/HTTP JSON only; the protocol asked for is ignored');
  }
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { detectResources, envDetector, resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
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
  const resource = resourceFromAttributes({ 'service.name': 'causeway', 'service.version': VERSION }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  provider.register();
  log.info({ serviceName: resource.attributes['service.name'] }, 'tracing on: spans exported over OTLP/HTTP');
  return {
    shutdown: (timeoutMs = 5_000) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          otel.warn({ timeoutMs }, 'spans not all exported before the drain ended');
          resolve();
        }, timeoutMs);
      });
      const done = provider.shutdown().catch((err: unknown) => otel.warn({ err }, 'exporting the last spans failed'));
      return Promise.race([done, late]).finally(() => clearTimeout(timer));
    },
  };
}
