// Across replicas: a session held on another replica (replica-relay.ts), asks that arrive outside
// a call and find their call on any replica (replica-asks.ts, for core/asking-calls.ts), and which
// upstreams ask so (outside-askers.ts).

export { ReplicaAsks } from './replica-asks.js';
export { type RelayOptions, ReplicaRelay } from './replica-relay.js';
export { OutsideAskers, type SharedAskers } from './outside-askers.js';
