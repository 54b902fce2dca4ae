export { ConfigError, loadConfig } from './load.js';
export { helpText } from './help.js';
export { type Config, type PrincipalMode, type CacheScope } from './schema.js';
export { resolveTopology, type CachePolicy, type UpstreamSpec, type RouteRule } from './topology.js';
