export { createMetrics, type Metrics, type Probes } from './registry.js';
export {
  AuthMetrics,
  CacheMetrics,
  RequestMetrics,
  StoreMetrics,
  UpstreamMetrics,
  type AnswerOutcome,
  type ResultType,
  type UpstreamResult,
} from './recorders.js';
export { KnownNames, compileTemplate, NO_NAME, OTHER_NAME } from './names.js';
export { boundCounter, boundHistogram } from './bound.js';
