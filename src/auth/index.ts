export { ResourceServer, resourcesOf, type Authenticated, type AuthSettings } from './resource-server.js';
export { Access, type Identity } from './grant.js';
export { WELL_KNOWN_PRM } from './metadata.js';
export { replayCacheFor, type ReplayCache } from './replay-cache.js';
export { SubjectTokens } from './subject-tokens.js';
export { ANONYMOUS, principalHash, type PrincipalPolicy } from './principal.js';
