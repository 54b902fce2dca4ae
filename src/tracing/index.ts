export { startTracing, tracingRequested, type Tracing, type TracingEnv } from './sdk.js';
