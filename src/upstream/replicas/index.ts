// Across replicas: a session held on another replica (replica-relay.ts), asks that arrive outside
// a call and find their call on any replica (outside-asks.ts, replica-asks.ts), and the standing
// streams that carry them (standing-streams.ts).

export { ASKING_METHODS, type AskEntry, OutsideAsks } from './outside-asks.js';
export { ReplicaAsks } from './replica-asks.js';
export { type RelayOptions, ReplicaRelay } from './replica-relay.js';
export { StandingStreams, wantsStandingStream } from './standing-streams.js';
