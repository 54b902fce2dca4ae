export { ConfigError, configFile, loadConfig } from './load.js';
export { configHash, isLive, liveChanges, LIVE_SETTINGS, same } from './live.js';
export { helpText } from './help.js';
export { type Config, type PrincipalMode, type CacheScope, type QuotaRule, type StandingStream } from './schema.js';
export { parseRules, type ScopeRule } from './scope-rules.js';
export {
  resolveTopology,
  type CachePolicy,
  type UpstreamSpec,
  type RouteRule,
  type SkillRoot,
  type MountSpec,
  type Topology,
} from './topology.js';
export { safeForSecrets, type CredentialGrant, type CredentialSpec } from './credentials.js';
