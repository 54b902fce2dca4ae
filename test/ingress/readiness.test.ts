// /readyz follows the configured session store: a replica that has not reached its Redis (a typo
// in store.redisUrl, or a Redis not up yet) shares nothing with the others, so it answers 503
// saying why, on the data port and the admin port, until Redis answers. A Redis lost later is
// lost by every replica at once: they stay ready and serve with replica-local sessions.
// /healthz (liveness) stays 200 throughout.

import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const redisSettings = (url: string) => ({
  'upstream.url': 'http://127.0.0.1:9/mcp',
  'store.kind': 'redis',
  'store.redisUrl': url,
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
  'log.level': 'info',
});

interface Probe {
  status: number;
  body: { status?: string; reason?: string };
}

async function probe(origin: string, path: string): Promise<Probe> {
  const res = await fetch(`${origin}${path}`);
  return { status: res.status, body: (await res.json()) as Probe['body'] };
}

/** Waits until /readyz answers `status` on both ports; the data port's answer. */
function readyzBecomes(causeway: RunningCauseway, status: number): Promise<Probe> {
  return until(
    async () => {
      const data = await probe(`http://127.0.0.1:${causeway.port}`, '/readyz');
      const admin = await probe(causeway.adminUrl!, '/readyz');
      return data.status === status && admin.status === status && data;
    },
    { what: `/readyz ${status} on both ports` },
  );
}

const NOT_REACHED = 'session store not reached yet: check store.redisUrl (or store.redisSentinels, store.redisCluster)';

t.test('a Redis URL nobody answers at (a typo): not ready, saying why; alive', async (t) => {
  const port = await freePort();
  const causeway = await startCauseway(redisSettings(`redis://127.0.0.1:${port}`));
  t.teardown(() => causeway.close());
  for (const origin of [`http://127.0.0.1:${causeway.port}`, causeway.adminUrl!]) {
    const ready = await probe(origin, '/readyz');
    t.equal(ready.status, 503, `${origin} /readyz is 503`);
    t.same(ready.body, { status: 'not ready', reason: NOT_REACHED });
    t.notMatch(JSON.stringify(ready.body), String(port), 'the address is left to the log');
    t.equal((await probe(origin, '/healthz')).status, 200, `${origin} /healthz stays 200`);
  }
});

t.test('a Redis away at start: not ready until it answers; lost later, ready still', async (t) => {
  const redis = await startRedis(t);
  await redis.kill();
  const causeway = await startCauseway(redisSettings(redis.url));
  t.teardown(() => causeway.close());
  const reason = NOT_REACHED;
  t.same((await readyzBecomes(causeway, 503)).body, { status: 'not ready', reason });
  t.equal((await probe(`http://127.0.0.1:${causeway.port}`, '/healthz')).status, 200, '/healthz stays 200');

  await redis.restart();
  t.same((await readyzBecomes(causeway, 200)).body, { status: 'ready' }, 'ready once Redis answers');

  // Every replica loses a Redis at once: they serve on with replica-local sessions (README, Redis topologies).
  await redis.kill();
  const gone = () => causeway.logs.some((l) => l.includes('redis unreachable'));
  await until(gone, { what: 'the replica to find Redis gone' });
  const after = await probe(`http://127.0.0.1:${causeway.port}`, '/readyz');
  t.equal(after.status, 200, 'still ready after an outage begins');
});
