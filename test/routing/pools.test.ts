// Upstream pools: one logical upstream with two equivalent URLs (two fixture processes). New
// sessions are spread over both; one replica killed -> its URL is ejected, its sessions move to
// the other, and no request fails; restarted -> re-admitted after ejectMs and given new sessions
// again. Legacy clients through the same pool keep their session on one URL.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startCauseway } from '../helpers/causeway.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { post, toolCall } from '../e2e/wire.js';
import { spawnFixture, type FixtureProcess } from '../e2e/upstreams.js';

const EJECT_MS = 800;

async function scrape(adminUrl: string): Promise<string> {
  return (await fetch(`${adminUrl}/metrics`)).text();
}

function callAs(url: string, principal: string, text: string) {
  const { body, headers } = toolCall('echo', { text });
  return post(url, body, { ...headers, 'x-causeway-principal': principal });
}

t.test('pool: spread, eject a killed replica with no failed request, re-admit it', async (t) => {
  const a = await spawnFixture(0, { t });
  const bPort = await freePort();
  let b: FixtureProcess = await spawnFixture(bPort, { t });
  t.teardown(async () => {
    await a.kill();
    await b.kill();
  });
  const causeway = await startCauseway({
    upstreams: JSON.stringify({ replicas: { urls: [a.url, b.url], ejectMs: EJECT_MS } }),
    'principal.mode': 'header',
    'principal.hashSecret': 'pool-test-secret-0123456789',
  });
  t.teardown(() => causeway.close());

  const principals = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
  for (const p of principals) {
    const r = await callAs(causeway.url, p, `hello ${p}`);
    t.equal(r.status, 200, `first call of ${p}`);
  }
  t.equal((await a.stats()).initializeCount, 3, 'new sessions alternate: three on the first URL');
  t.equal((await b.stats()).initializeCount, 3, 'and three on the second');

  await b.kill();
  const failures: string[] = [];
  for (let round = 0; round < 3; round++) {
    for (const p of principals) {
      const r = await callAs(causeway.url, p, `again ${p} ${round}`);
      if (r.status !== 200 || r.json?.result?.content?.[0]?.text !== `again ${p} ${round}`)
        failures.push(`${p}#${round}: ${r.status} ${r.text.slice(0, 200)}`);
    }
  }
  t.same(failures, [], 'no request failed once the replica was gone');
  t.equal(
    (await a.stats()).initializeCount,
    6,
    'the three sessions of the dead replica moved to the live one, once each',
  );
  t.ok(
    causeway.logs.some((l) => l.includes('upstream URL ejected')),
    'the ejection is logged',
  );
  t.match(
    await scrape(causeway.adminUrl!),
    /causeway_upstream_ejections_total\{upstream="replicas",target="1"\} 1\b/,
    'and counted, by position',
  );
  t.match(
    await scrape(causeway.adminUrl!),
    /causeway_upstream_initialize_total\{upstream="replicas",reason="unreachable"\} 1\b/,
    'the first session to find it dead counts as unreachable',
  );
  t.match(
    await scrape(causeway.adminUrl!),
    /causeway_upstream_initialize_total\{upstream="replicas",reason="ejected"\} 2\b/,
    'the others moved before being tried',
  );
  t.notOk(
    causeway.logs.some((l) => l.includes(b.url)),
    'URLs are logged by position only',
  );

  b = await spawnFixture(bPort, { t });
  // Re-admission is read off the clock at the next pick, and a timer never fires early.
  await new Promise((r) => setTimeout(r, EJECT_MS + 100)); // lower bound: past ejectMs
  for (const p of ['q1', 'q2', 'q3', 'q4']) t.equal((await callAs(causeway.url, p, p)).status, 200);
  t.equal((await b.stats()).initializeCount, 2, 're-admitted: new sessions reach the restarted replica again');
  t.ok(causeway.logs.some((l) => l.includes('upstream URL re-admitted')));
});

t.test('pool: a legacy client keeps its session on one URL, and starts over when that URL dies', async (t) => {
  const a = await spawnFixture(0, { t });
  const b = await spawnFixture(0, { t });
  t.teardown(async () => {
    await a.kill();
    await b.kill();
  });
  const causeway = await startCauseway({
    upstreams: JSON.stringify({ replicas: { urls: [a.url, b.url], ejectMs: 60_000 } }),
  });
  t.teardown(() => causeway.close());

  const clients: LegacyClient[] = [];
  const transports: LegacyTransport[] = [];
  for (let i = 0; i < 2; i++) {
    const transport = new LegacyTransport(new URL(causeway.url));
    const client = new LegacyClient({ name: `legacy-${i}`, version: '1.0.0' });
    await client.connect(transport);
    t.teardown(() => client.close());
    clients.push(client);
    transports.push(transport);
  }
  t.match(transports[0]!.sessionId, /^0\./, 'the first session lives on URL 0, and says so in its id');
  t.match(transports[1]!.sessionId, /^1\./, 'the second on URL 1');
  for (let i = 0; i < 3; i++) {
    for (const c of clients)
      t.same((await c.callTool({ name: 'echo', arguments: { text: `x${i}` } })).content, [
        { type: 'text', text: `x${i}` },
      ]);
  }
  t.equal((await a.stats()).toolCalls['echo'], 3, 'each legacy session stays on its URL');
  t.equal((await b.stats()).toolCalls['echo'], 3);

  await b.kill();
  const r = await post(
    causeway.url,
    { jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} },
    {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      'mcp-session-id': transports[1]!.sessionId!,
    },
  );
  t.equal(r.status, 404, 'a session on the dead URL is gone: 404 tells the legacy client to initialize again');
  for (const forged of ['no-index', '7.beyond-the-list', 'x.not-a-number']) {
    const f = await post(
      causeway.url,
      { jsonrpc: '2.0', id: 10, method: 'tools/list', params: {} },
      {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        'mcp-session-id': forged,
      },
    );
    t.equal(f.status, 404, `a session id Causeway did not hand out (${forged}) is an unknown session`);
  }
  const again = new LegacyClient({ name: 'legacy-again', version: '1.0.0' });
  const transport = new LegacyTransport(new URL(causeway.url));
  await again.connect(transport);
  t.teardown(() => again.close());
  t.match(transport.sessionId, /^0\./, 'the new session lands on the live URL');
  t.same((await again.callTool({ name: 'echo', arguments: { text: 'back' } })).content, [
    { type: 'text', text: 'back' },
  ]);
});

t.test(
  'pool across Causeway replicas sharing Redis: a session moved by one replica is adopted by the other',
  async (t) => {
    const redis = await startRedis(t);
    const a = await spawnFixture(0, { t });
    const b = await spawnFixture(0, { t });
    const settings = {
      upstreams: JSON.stringify({ replicas: { urls: [a.url, b.url], ejectMs: 60_000 } }),
      'store.kind': 'redis',
      'store.redisUrl': redis.url,
      'mrtr.stateKeys': randomBytes(32).toString('base64'),
      'principal.mode': 'header',
      'principal.hashSecret': 'pool-test-secret-0123456789',
    };
    const one = await startCauseway(settings);
    const two = await startCauseway(settings);
    t.teardown(async () => {
      await Promise.all([one.close(), two.close()]);
      await Promise.all([a.kill(), b.kill()]);
      await redis.stop();
    });
    const counter = async (via: string, principal: string) => {
      const { body, headers } = toolCall('counter', {});
      const r = await post(via, body, { ...headers, 'x-causeway-principal': principal });
      return r.status === 200 ? String(r.json?.result?.content?.[0]?.text) : `HTTP ${r.status}`;
    };
    // u1 lands on URL 0, u2 on URL 1; both replicas then share those sessions through Redis.
    t.same([await counter(one.url, 'u1'), await counter(one.url, 'u2')], ['1', '1']);
    t.same(
      [await counter(two.url, 'u1'), await counter(two.url, 'u2')],
      ['2', '2'],
      'the other replica uses the same sessions',
    );

    await b.kill();
    t.equal(
      await counter(two.url, 'u2'),
      '1',
      'replica two finds URL 1 dead: a new session on URL 0, the request not lost',
    );
    t.equal(
      await counter(one.url, 'u2'),
      '2',
      'replica one, which saw nothing fail, adopts that session instead of opening another',
    );
    t.equal(await counter(one.url, 'u1'), '3', 'sessions on the live URL are untouched');
    t.equal((await a.stats()).initializeCount, 2, 'one new session for the moved key, across both replicas');
  },
);

t.test('pool: a URL that answers initialize with 503 is passed over and ejected', async (t) => {
  const good = await spawnFixture(0, { t });
  let refused = 0;
  // Counted: the initializes it refused (the era probe, server/discover, is not a session).
  const busy = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (body.includes('"initialize"')) refused += 1;
      res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' }).end('starting');
    });
  });
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const busyUrl = `http://127.0.0.1:${(busy.address() as AddressInfo).port}/mcp`;
  const causeway = await startCauseway({
    upstreams: JSON.stringify({ replicas: { urls: [busyUrl, good.url], ejectMs: 60_000 } }),
    'principal.mode': 'header',
    'principal.hashSecret': 'pool-test-secret-0123456789',
  });
  t.teardown(async () => {
    await causeway.close();
    await good.kill();
    await new Promise((r) => busy.close(r));
  });
  for (const p of ['p1', 'p2', 'p3', 'p4']) {
    const r = await callAs(causeway.url, p, p);
    t.equal(r.status, 200, `${p} is served`);
  }
  t.equal(refused, 1, 'the busy URL was asked to initialize once, then ejected');
  t.equal((await good.stats()).initializeCount, 4, 'every session went to the URL that could take it');
});

t.test('pool: every URL down is a prompt 502, and nothing is left half-open', async (t) => {
  const ports = [await freePort(), await freePort()];
  // Connect and request timeouts no test reaches: a 502 at all shows none was waited for (a
  // wait for one hangs the test), and the ejection of each URL that both were tried.
  const causeway = await startCauseway({
    upstreams: JSON.stringify({
      replicas: {
        urls: ports.map((p) => `http://127.0.0.1:${p}/mcp`),
        connectTimeoutMs: 600_000,
        requestTimeoutMs: 600_000,
      },
    }),
  });
  t.teardown(() => causeway.close());
  const started = Date.now();
  const r = await callAs(causeway.url, 'anyone', 'x');
  t.equal(r.status, 502);
  t.equal(r.json.error.code, -32603);
  t.comment(`502 after ${Date.now() - started} ms`);
  const ejected = causeway.logs
    .filter((l) => l.includes('upstream URL ejected'))
    .map((l) => JSON.parse(l).target as unknown);
  t.same(ejected.sort(), [0, 1], 'both URLs tried, each ejected once');
  t.equal((await callAs(causeway.url, 'anyone', 'x')).status, 502, 'and again while they stay down');
});
