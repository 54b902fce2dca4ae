// The counters quotas spend: fixed windows that start at a tenant's first counted call. A call
// spends every quota that matches it or none: when one is spent, nothing is counted. With the
// Redis store one script call per request checks and counts them all, so every replica spends
// the same counters; with the memory store they are this replica's.

import type { RedisClient } from '../bus/index.js';

/** One counter a call spends: its key, its limit and its window. */
export interface Spend {
  key: string;
  limit: number;
  windowMs: number;
}

/** Undefined when every counter took the call; else which one is spent and the ms until it resets. */
export type Spent = { index: number; resetMs: number } | undefined;

export interface Counters {
  spend(spends: readonly Spend[]): Promise<Spent>;
}

const MAX_LOCAL = 100_000;

export class MemoryCounters implements Counters {
  private readonly counts = new Map<string, { n: number; resetAt: number }>();

  async spend(spends: readonly Spend[]): Promise<Spent> {
    const now = Date.now();
    const current = spends.map(({ key }) => {
      const c = this.counts.get(key);
      return c !== undefined && c.resetAt > now ? c : undefined;
    });
    const index = spends.findIndex((s, i) => (current[i]?.n ?? 0) >= s.limit);
    if (index >= 0) return { index, resetMs: current[index]!.resetAt - now };
    spends.forEach((s, i) => {
      const c = current[i] ?? { n: 0, resetAt: now + s.windowMs };
      c.n += 1;
      this.counts.delete(s.key);
      this.counts.set(s.key, c);
    });
    // The least recently spent go first: a tenant quiet that long has most likely seen its window end.
    for (const k of this.counts.keys()) {
      if (this.counts.size <= MAX_LOCAL) break;
      this.counts.delete(k);
    }
    return undefined;
  }
}

// KEYS: the counters; ARGV: limit and window (ms) of each in turn. Returns {0, 0} when counted, else
// {i, pttl} of the first spent counter (1-based).
const SPEND = `
for i = 1, #KEYS do
  local n = tonumber(redis.call('GET', KEYS[i]) or '0')
  if n >= tonumber(ARGV[2 * i - 1]) then
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl < 0 then
      redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])
      ttl = tonumber(ARGV[2 * i])
    end
    return {i, ttl}
  end
end
for i = 1, #KEYS do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[2 * i]) end
end
return {0, 0}
`;

type Script = { cwQuota(n: number, ...args: Array<string | number>): Promise<[number, number]> };

export class RedisCounters implements Counters {
  private readonly script: Script;

  constructor(client: RedisClient) {
    client.defineCommand('cwQuota', { lua: SPEND });
    this.script = client as unknown as Script;
  }

  async spend(spends: readonly Spend[]): Promise<Spent> {
    const args: Array<string | number> = spends.map((s) => s.key);
    for (const s of spends) args.push(s.limit, s.windowMs);
    const [index, resetMs] = await this.script.cwQuota(spends.length, ...args);
    return index === 0 ? undefined : { index: index - 1, resetMs };
  }
}
