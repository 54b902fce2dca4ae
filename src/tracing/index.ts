export type { Span } from '@opentelemetry/api';
export { inRequestSpan, inStepSpan, inStoreSpan, inUpstreamSpan, injectHeaders, markFailed, type McpCall, type ServedRequest } from './spans.js';
export { startTracing, tracingRequested, type Tracing, type TracingEnv } from './sdk.js';
