// Across replicas: a session held on another replica (replica-relay.ts), asks that arrive outside
// a call and find their call on any replica (replica-asks.ts, for core/asking-calls.ts), and the standing
// streams that carry them (standing-streams.ts).

export { ReplicaAsks } from './replica-asks.js';
export { type RelayOptions, ReplicaRelay } from './replica-relay.js';
export { StandingStreams, wantsStandingStream } from './standing-streams.js';
