export { runRound } from './bridge.js';
export {
  adopt,
  eventRead,
  heldCallTimeoutMs,
  listenerFor,
  nextRound,
  type BridgeDeps,
  type CallStop,
  type EventIds,
  type RoundExchange,
  type RoundResult,
  type ReplicaBridge,
} from './call.js';
export { serveHandedRounds } from './retry.js';
export { signInRound, urlElicitationRound } from './url-rounds.js';
export { Handoff } from './handoff.js';
export { HeldCalls, type HeldAsTask, type PendingCall, type RunningCall } from './holder.js';
export { StateSealer } from './request-state.js';
export { ASK_METHODS, toAsk, validAnswer } from './asks.js';
