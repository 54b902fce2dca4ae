// Per-principal rate limit (limits.ratePerSecond, limits.rateBurst): a token bucket per principal
// hash, in memory for one replica or in Redis when the store is, so every replica spends the same
// bucket (one script call per request, none when the limit is off). A store that cannot be reached
// lets the request through: the limit protects the upstream, not Causeway's own availability.

import { CausewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { SessionStore } from '../pool/index.js';

export interface RateSettings {
  /** 0: no principal-wide bucket. */
  ratePerSecond: number;
  burst: number;
  /** Buckets per principal and method, spent besides the principal's own. */
  methods: ReadonlyMap<string, { ratePerSecond: number; burst: number }>;
}

interface Buckets {
  /** 0 when a token was taken, else the ms until one is due. */
  take(key: string, ratePerSecond: number, burst: number): Promise<number>;
}

const MAX_LOCAL = 100_000;

class MemoryBuckets implements Buckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  async take(key: string, rate: number, burst: number): Promise<number> {
    const now = Date.now();
    const b = this.buckets.get(key) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + (Math.max(0, now - b.at) * rate) / 1000);
    b.at = now;
    let wait = 0;
    if (b.tokens >= 1) b.tokens -= 1;
    else wait = Math.ceil(((1 - b.tokens) * 1000) / rate);
    this.buckets.delete(key);
    this.buckets.set(key, b);
    // The least recently used go first: a principal gone quiet that long has a full bucket again.
    for (const k of this.buckets.keys()) {
      if (this.buckets.size <= MAX_LOCAL) break;
      this.buckets.delete(k);
    }
    return wait;
  }
}

export class RateLimiter {
  private readonly buckets: Buckets;

  constructor(
    private readonly settings: RateSettings,
    store: SessionStore,
    private readonly log: Logger,
  ) {
    this.buckets = store.shared?.buckets ?? new MemoryBuckets();
  }

  /** The 429 for a principal over its rate, with Retry-After in whole seconds; undefined to go on. */
  refuse(principal: string): Promise<CausewayError | undefined> {
    const { ratePerSecond, burst } = this.settings;
    return ratePerSecond > 0 ? this.spend(principal, ratePerSecond, burst) : Promise.resolve(undefined);
  }

  /** The same for the principal's bucket of `method`, when limits.rateMethods has one. */
  refuseMethod(principal: string, method: string): Promise<CausewayError | undefined> {
    const limit = this.settings.methods.get(method);
    return limit ? this.spend(`${principal}|${method}`, limit.ratePerSecond, limit.burst) : Promise.resolve(undefined);
  }

  private async spend(key: string, ratePerSecond: number, burst: number): Promise<CausewayError | undefined> {
    let wait: number;
    try {
      wait = await this.buckets.take(key, ratePerSecond, burst);
    } catch (err) {
      this.log.warn({ err }, 'rate limit store unreachable; request let through');
      return undefined;
    }
    if (wait <= 0) return undefined;
    const seconds = Math.max(1, Math.ceil(wait / 1000));
    return new CausewayError(
      'rate_limited',
      `Rate limit exceeded; retry after ${seconds} s`,
      { retryAfterSeconds: seconds },
      { headers: { 'retry-after': String(seconds) } },
    );
  }
}
