export type { Span } from '@opentelemetry/api';
export {
  activeTraceparent,
  inRemoteSpan,
  inRequestSpan,
  inStepSpan,
  inStoreSpan,
  inUpstreamSpan,
  injectHeaders,
  linkTo,
  markFailed,
  tracingOn,
  type McpCall,
  type ServedRequest,
} from './spans.js';
export { startTelemetry, tracingRequested, metricsRequested, type Telemetry, type TracingEnv } from './sdk.js';
export { operationDone } from './operations.js';
