export { toLegacyClientCapabilities, toModernServerCapabilities, canonicalJson, requiredCapability, declares } from './capabilities.js';
export { discoverResult, serverInfoOf } from './discover.js';
export { translateResult, withResultMeta, normalizeToolsList, type CacheHint, type ResultContext } from './results.js';
export { translateError, statusForUpstreamError } from './errors.js';
