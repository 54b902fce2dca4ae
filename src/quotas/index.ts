export { Quotas, type QuotaCall, type QuotaObserver } from './quotas.js';
export { MemoryCounters, RedisCounters, type Counters } from './counters.js';
