// The two counter stores quotas spend, held to one contract: a call spends every counter it
// matches or none, a spent counter names itself and the ms until its window ends, and a window
// starts at its first counted call. The Redis one runs on a real Redis.

import t from 'tap';
import { Redis } from 'ioredis';
import { MemoryCounters, RedisCounters, type Counters } from '../../src/quotas/index.js';
import { startRedis } from '../helpers/redis.js';

const redis = await startRedis(t);
const client = new Redis(redis.url);
t.teardown(() => client.disconnect());

const stores: Array<[string, Counters]> = [
  ['memory', new MemoryCounters()],
  ['redis', new RedisCounters(client)],
];

for (const [kind, counters] of stores) {
  t.test(`${kind}: all or nothing, and the spent counter named with its reset`, async (t) => {
    const wide = { key: `${kind}:{t}:wide`, limit: 3, windowMs: 60_000 };
    const narrow = { key: `${kind}:{t}:narrow`, limit: 1, windowMs: 3_600_000 };
    t.equal(await counters.spend([wide, narrow]), undefined, 'the first call spends both');
    const spent = await counters.spend([wide, narrow]);
    t.equal(spent?.index, 1, 'the narrow one is spent');
    t.ok(spent!.resetMs > 60_000 && spent!.resetMs <= 3_600_000, `its window ends within the hour (${spent!.resetMs})`);
    t.equal(await counters.spend([wide]), undefined, 'the refused call spent nothing of the wide one');
    t.equal(await counters.spend([wide]), undefined);
    const full = await counters.spend([wide]);
    t.equal(full?.index, 0, 'the wide one took exactly 3');
    t.ok(full!.resetMs > 0 && full!.resetMs <= 60_000);
  });

  t.test(`${kind}: a window ends and the counter starts again`, async (t) => {
    const short = { key: `${kind}:{t}:short`, limit: 1, windowMs: 50 };
    t.equal(await counters.spend([short]), undefined);
    const spent = await counters.spend([short]);
    // The window may already have ended on a slow machine; then the call was counted afresh.
    if (spent !== undefined) {
      t.equal(spent.index, 0);
      await new Promise((r) => setTimeout(r, spent.resetMs + 20));
    }
    let again = await counters.spend([short]);
    while (again !== undefined) {
      await new Promise((r) => setTimeout(r, again!.resetMs + 20));
      again = await counters.spend([short]);
    }
    t.equal(again, undefined, 'a new window takes a call');
  });
}
