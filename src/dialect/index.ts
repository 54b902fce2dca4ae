export {
  toLegacyClientCapabilities,
  toModernServerCapabilities,
  canonicalJson,
  requiredCapability,
  declares,
  declaredCapabilities,
  type Declared,
} from './capabilities.js';
export { discoverResult, serverInfoOf } from './discover.js';
export {
  translateResult,
  withResultMeta,
  normalizeToolsList,
  toolFacts,
  type CacheHint,
  type ResultContext,
} from './results.js';
export { translateError, statusForUpstreamError } from './errors.js';
export {
  declaresTasks,
  isoTime,
  isTerminal,
  legacyTaskFrom,
  legacyTaskOf,
  taskStatusOf,
  taskSupportOf,
  timesOf,
  upstreamRunsTasks,
  RELATED_TASK_META,
  TASKS_EXTENSION,
  TASKS_REQUIRED,
  type TaskStatus,
  type TaskSupport,
  type TaskTimes,
} from './tasks.js';
