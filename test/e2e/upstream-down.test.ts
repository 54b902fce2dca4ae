// An HTTP upstream that is down while many principals call: its opens share one attempt at a
// time and back off (100 ms doubling to 1 s), the calls meanwhile get 503 upstream_backing_off
// with Retry-After, and the server, once back, serves the next calls at once. The legacy fixture
// is killed, its port held for a while by a listener that counts the initialize requests it is
// sent and drops each connection (a server restarting behind its port), then the fixture is
// started again on the same port.

import t from 'tap';
import net from 'node:net';
import { startCauseway } from '../helpers/causeway.js';
import { until } from '../helpers/until.js';
import { modernBody, modernHeaders } from './wire.js';
import { spawnFixture } from './upstreams.js';

const PRINCIPALS = Array.from({ length: 8 }, (_, i) => `user-${i}`);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Outcome {
  who: string;
  sentAt: number;
  ms: number;
  status: number;
  retryAfter: string | null;
  ok: boolean;
}

/** Holds a port: counts connections and initialize requests, and drops each once its request is read. */
async function portHolder(port: number) {
  const counts = { connections: 0, initializes: 0 };
  const server = net.createServer((socket) => {
    counts.connections++;
    let seen = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      const head = seen.indexOf('\r\n\r\n');
      const length = Number(/content-length:\s*(\d+)/i.exec(seen)?.[1] ?? 0);
      if (head < 0 || seen.length < head + 4 + length) return;
      if (seen.includes('"method":"initialize"')) counts.initializes++;
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  return { counts, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Attempts an upstream that stays down can get in `ms`: one, then one per wait of 100 ms doubling to 1 s. */
function attemptsWithin(ms: number): number {
  let n = 1;
  for (let at = 0, wait = 100; at <= ms; n++, at += wait, wait = Math.min(wait * 2, 1_000));
  return n;
}

t.test('a down upstream: one attempt at a time, 503 with Retry-After meanwhile, served when back', async (t) => {
  const first = await spawnFixture(0, { t });
  const port = first.port;
  const causeway = await startCauseway({
    'upstream.url': first.url,
    'upstream.requestTimeoutMs': 10_000,
    'principal.mode': 'header',
    'principal.hashSecret': 'upstream-down-test-secret-0123456789',
    'log.level': 'info',
  });
  t.teardown(() => causeway.close());

  const outcomes: Outcome[] = [];
  let stopped = false;
  let id = 0;
  const worker = async (who: string) => {
    while (!stopped) {
      const sentAt = Date.now();
      let status = 0;
      let retryAfter: string | null = null;
      let ok = false;
      try {
        const res = await fetch(causeway.url, {
          method: 'POST',
          headers: { ...modernHeaders('tools/call', 'counter'), 'x-causeway-principal': who },
          body: JSON.stringify(modernBody('tools/call', { name: 'counter', arguments: {} }, ++id)),
        });
        status = res.status;
        retryAfter = res.headers.get('retry-after');
        ok = status === 200 && !(await res.text()).includes('"error"');
      } catch {
        status = -1;
      }
      outcomes.push({ who, sentAt, ms: Date.now() - sentAt, status, retryAfter, ok });
      // A client retrying at once, as the ones that made the stampede did.
      if (!ok) await pause(5);
    }
  };

  // Down before any principal opened a session: every call needs an initialize.
  await first.kill();
  const holder = await portHolder(port);
  const heldAt = Date.now();
  const load = Promise.all(PRINCIPALS.map(worker));
  try {
    await until(() => outcomes.filter((o) => o.sentAt >= heldAt && !o.ok).length >= 4 * PRINCIPALS.length, {
      what: 'calls failing while the upstream is down',
    });
    const heldMs = Date.now() - heldAt;
    const { initializes, connections } = holder.counts;
    await holder.close();
    const down = outcomes.filter((o) => o.sentAt >= heldAt);

    // Until an open fails, the upstream is not known to be down: the first calls of each principal
    // (one open per principal at a time) run side by side. After that, one attempt per backoff.
    const bound = PRINCIPALS.length + attemptsWithin(heldMs);
    t.ok(initializes >= 1, 'the upstream was tried');
    t.ok(
      initializes <= bound,
      `${initializes} initializes (${connections} connections) for ${down.length} calls of ` +
        `${PRINCIPALS.length} principals in ${heldMs} ms: at most ${bound}, one per principal, then one per backoff`,
    );
    const refused = down.filter((o) => o.status === 503);
    t.ok(
      down.every((o) => o.status === 503 || o.status === 502),
      'each failed with 502 (the attempt) or 503',
    );
    t.ok(
      refused.length > 0 && refused.length >= down.length - initializes,
      `${refused.length} of ${down.length} answered 503 without an attempt of their own`,
    );
    t.ok(
      refused.every((o) => o.retryAfter === '1'),
      'with Retry-After: 1',
    );
    // How fast is the bench's to judge, not a test's: said, not asserted.
    t.comment(`the slowest answer while down took ${Math.max(...down.map((o) => o.ms))} ms`);

    const second = await spawnFixture(port, { t });
    const backAt = Date.now();
    await until(
      () => PRINCIPALS.every((who) => outcomes.filter((o) => o.who === who && o.ok && o.sentAt >= backAt).length >= 3),
      { what: 'every principal served after the restart' },
    );
    stopped = true;
    await load;
    const after = outcomes.filter((o) => o.sentAt >= backAt);
    t.same(
      after.filter((o) => !o.ok),
      [],
      `0 of ${after.length} calls sent once the server was back failed`,
    );
    const firstServed = Math.min(...after.filter((o) => o.ok).map((o) => o.sentAt + o.ms)) - backAt;
    t.comment(`the first call was served ${firstServed} ms after the server was back`);
    const seen = (await second.stats()).initializeCount;
    t.equal(seen, PRINCIPALS.length, 'the server, back, saw one initialize per principal');
  } finally {
    stopped = true;
    await load;
  }
});
