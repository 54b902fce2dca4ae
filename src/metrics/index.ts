export { createMetrics, type Metrics, type Probes } from './registry.js';
export {
  CacheMetrics,
  CountsBy,
  RequestMetrics,
  UpstreamMetrics,
  type AnswerOutcome,
  type ResultType,
  type UpstreamResult,
} from './recorders.js';
export { KnownNames, compileTemplate, NO_NAME, OTHER_NAME } from './names.js';
export { boundCounter, boundHistogram } from './bound.js';
export {
  AUTH_FAILURES,
  type AuthFailure,
  type CacheRecorder,
  type CacheScope,
  type DropReason,
  type OutsideAskOutcome,
  type RetryVia,
} from './labels.js';
