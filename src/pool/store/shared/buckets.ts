// The limits.rate* token buckets in Redis, beside the sessions, so every replica spends the same
// bucket of a principal (ingress/rate-limit.ts spends them, and keeps the memory kind):
//
//   P rate:{K}  hash  tokens, at: the bucket of principal hash K (or K|method); PEXPIRE until full again.

import type { RedisClient } from '../../../bus/index.js';
import { tag } from './hash-tag.js';

interface Script {
  cwTake(key: string, ratePerSecond: number, burst: number): Promise<number>;
}

/**
 * Token bucket on Redis's own clock (replicas' clocks differ): 0 when a token was taken, else the
 * ms until one is due. Kept no longer than the bucket needs to fill again.
 */
export const BUCKET_SCRIPT = {
  cwTake: {
    keys: 1,
    lua: `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or burst
local at = tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) * 1000 / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return wait`,
  },
} as const;

export class RedisBuckets {
  private readonly script: Script;

  constructor(
    client: RedisClient,
    private readonly keyPrefix: string,
  ) {
    for (const [name, { keys, lua }] of Object.entries(BUCKET_SCRIPT))
      client.defineCommand(name, { numberOfKeys: keys, lua });
    this.script = client as unknown as Script;
  }

  /** Takes one token of `key`'s bucket: 0 when taken, else the ms until one is due (one round trip). */
  async take(key: string, ratePerSecond: number, burst: number): Promise<number> {
    return this.script.cwTake(`${this.keyPrefix}rate:{${tag(key)}}`, ratePerSecond, burst);
  }
}
