export { Subscriptions, type ListenExchange, type SubscriptionDeps, type SubscriptionLimits } from './listen.js';
export { InProcessSessionEventBus, type SessionEventBus, type SessionEventHandler } from './bus.js';
export { type ListenFilter } from './filter.js';
