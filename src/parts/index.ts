export { ORDER, Parts, type AppParts, type Ground } from './registry.js';
export { cachePart, catalogPart, storePart } from './kept.js';
export { askersPart, crossReplicaPart, heldPart, relayPart, replicaAsksPart, roundsPart } from './replica.js';
export { upstreamsPart } from './upstream-parts.js';
export { modernDeps, modernDepsOf, poolPart, staleFacts, subscriptionsPart, tasksPart } from './sessions.js';
export { mountsPart } from './mount-parts.js';
export { adminPart, ingressPart, type Listening, type Readiness } from './front.js';
export { probesOf } from './probes.js';
export { reloadPart, type ConfigSource, type ReloadResult } from './reload.js';
