export type { Span } from '@opentelemetry/api';
export { activeTraceparent, inRemoteSpan, inRequestSpan, inStepSpan, inStoreSpan, inUpstreamSpan, injectHeaders, linkTo, markFailed, type McpCall, type ServedRequest } from './spans.js';
export { startTracing, tracingRequested, type Tracing, type TracingEnv } from './sdk.js';
