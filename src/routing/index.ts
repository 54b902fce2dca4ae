export { Federation, type Routed } from './federation.js';
export { loopbackWire } from './loopback.js';
export type { ModernMount, MountFront } from './mount.js';
export { compileRules } from './rules.js';
export type { AccessNotes, Answered, ModernDeps, ModernExchange, ModernSide } from './exchange.js';
export { sessionKeyFor } from './session-keys.js';
export { learnTools, readTools } from './tool-facts.js';
export { answerFailure, modernAnswer, type Keep } from './answer.js';
