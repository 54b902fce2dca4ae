export { runRound, signInRound, type BridgeDeps, type RoundResult, serveHandedRounds, type ReplicaBridge, type RetryVia } from './bridge.js';
export { Handoff } from './handoff.js';
export { HeldCalls } from './holder.js';
export { StateSealer } from './request-state.js';
export { ASK_METHODS, toAsk, validAnswer } from './asks.js';
