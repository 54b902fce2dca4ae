export type { Fallback, WarmExchange, WarmUpstream } from './exchange.js';
export { WarmLane } from './lane.js';
