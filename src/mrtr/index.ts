export { runRound } from './bridge.js';
export { signInRound, type BridgeDeps, type RoundResult, type ReplicaBridge, type RetryVia } from './call.js';
export { serveHandedRounds } from './retry.js';
export { Handoff } from './handoff.js';
export { HeldCalls, type HeldAsTask, type RunningCall } from './holder.js';
export { StateSealer } from './request-state.js';
export { ASK_METHODS, toAsk, validAnswer } from './asks.js';
