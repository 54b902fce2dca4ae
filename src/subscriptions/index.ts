export {
  Subscriptions,
  type ListenExchange,
  type ListenPart,
  type RemoteListen,
  type SubscriptionDeps,
  type SubscriptionLimits,
} from './listen.js';
export {
  InProcessSessionEventBus,
  SharedSessionEventBus,
  tapped,
  type SessionEventBus,
  type SessionEventHandler,
} from './bus.js';
export { type ListenFilter } from './filter.js';
export { type StandingPolicy } from './standing.js';
export { LocalCoordinator, listenTickMs, type ListenCoordinator } from './coordination.js';
export { crossReplicaListen, type CrossReplicaListen, type CrossReplicaOptions } from './cross-replica.js';
