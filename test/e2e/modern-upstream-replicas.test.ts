// Legacy clients of a 2026-only server through two replicas on one Redis: a legacy session's
// POSTs, its GET stream and its answers to the server's asks land on different replicas, and
// the session, its subscriptions and its rounds hold. And an upstream restarted from legacy to
// modern on the same port behind running replicas: both client eras keep being served.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startModernServer } from '../fixtures/modern-server.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const redis = await startRedis();

async function twoReplicas(t: Test, upstreamUrl: string) {
  const settings = {
    'upstream.url': upstreamUrl,
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'store.keyPrefix': `mu${Math.random().toString(36).slice(2, 8)}:`,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
    'log.level': 'warn',
  };
  const a = await startCauseway(settings);
  const b = await startCauseway(settings);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  return [a, b] as const;
}

/** A fetch that sends POSTs to the replicas in turn, GETs to the second and DELETEs to the first. */
function spread(urls: readonly string[]) {
  let n = 0;
  const seen: string[] = [];
  const fetchVia = (_input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const method = init?.method ?? 'GET';
    const to = method === 'POST' ? urls[n++ % urls.length]! : method === 'GET' ? urls[1]! : urls[0]!;
    seen.push(`${method} ${to}`);
    return fetch(to, init);
  };
  return { fetchVia, seen };
}

t.test('a legacy session across two replicas: POSTs, GET stream and answers on different replicas', async (t) => {
  const upstream = await startModernServer();
  t.teardown(() => upstream.close());
  const [a, b] = await twoReplicas(t, upstream.url);
  const { fetchVia, seen } = spread([a.url!, b.url!]);
  const client = new LegacyClient({ name: 'spread', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({
    action: 'accept',
    content: { name: 'Ada', user_name: 'Ada' },
  }));
  const updated: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
  await client.connect(new LegacyTransport(new URL(a.url!), { fetch: fetchVia }));
  t.teardown(() => client.close());
  t.teardown(() => {
    for (const r of [a, b]) for (const l of r.logs) if (/"level":(40|50)/.test(l)) t.comment(l);
  });

  for (let i = 0; i < 3; i++) {
    const result = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
    t.match(
      JSON.stringify(result.content),
      /Ada/,
      `round ${i + 1}: the answer, POSTed to whichever replica, reached the call`,
    );
  }
  t.ok(
    seen.some((s) => s.startsWith(`POST ${a.url}`)) && seen.some((s) => s.startsWith(`POST ${b.url}`)),
    'POSTs went to both replicas',
  );

  await client.subscribeResource({ uri: 'test://watched-resource' });
  await until(() => seen.some((s) => s.startsWith('GET')), { what: 'the GET stream opened on the second replica' });
  // The subscription was made on one replica, the stream is held on the other: the change reaches it.
  await until(
    async () => {
      await client.callTool({ name: 'test_trigger_resource_update', arguments: {} });
      return updated.includes('test://watched-resource');
    },
    { what: 'resources/updated on the GET stream', timeoutMs: 30_000, everyMs: 500 },
  );
  t.pass('resources/updated reached the stream held on the other replica');
});

t.test('an upstream restarted from legacy to modern on the same port keeps serving both client eras', async (t) => {
  const port = await freePort();
  let legacy: Awaited<ReturnType<typeof startLegacyServer>> | undefined = await startLegacyServer({ port });
  let modern: Awaited<ReturnType<typeof startModernServer>> | undefined;
  t.teardown(async () => {
    await legacy?.close();
    await modern?.close();
  });
  const [a, b] = await twoReplicas(t, legacy.url);

  const legacyCall = async (url: string) => {
    const client = new LegacyClient({ name: 'legacy', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new LegacyTransport(new URL(url)));
    try {
      return await client.callTool({ name: 'test_simple_text', arguments: {} });
    } finally {
      await client.close();
    }
  };
  const modernCall = async (url: string) => {
    const client = new Client(
      { name: 'modern', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
      return await client.callTool({ name: 'test_simple_text', arguments: {} });
    } finally {
      await client.close();
    }
  };
  for (const r of [a, b]) {
    t.match((await legacyCall(r.url!)).content, [{ type: 'text' }], 'legacy client, legacy upstream');
    t.match((await modernCall(r.url!)).content, [{ type: 'text' }], 'modern client, legacy upstream');
  }

  await legacy.close();
  legacy = undefined;
  modern = await startModernServer({ port });
  // The first request in the old era is refused upstream; the era is found again and the request
  // served in the new one. A legacy client's refused initialize has the era found again too: its
  // next one is served.
  const legacyAfter = await until(() => legacyCall(a.url!), { what: 'a legacy client served after the upgrade' });
  t.match(legacyAfter.content, [{ type: 'text' }], 'legacy client, modern upstream, first on its replica');
  t.match((await modernCall(a.url!)).content, [{ type: 'text' }], 'modern client, modern upstream');
  t.match(
    (await modernCall(b.url!)).content,
    [{ type: 'text' }],
    'modern client, modern upstream, first on its replica',
  );
  t.match((await legacyCall(b.url!)).content, [{ type: 'text' }], 'legacy client, modern upstream');
  t.ok((modern.stats().requestsByMethod['tools/call'] ?? 0) >= 4, 'the calls reached the modern server');

  // And rolled back: the modern server gives way to a legacy one on the same port.
  await modern.close();
  modern = undefined;
  legacy = await startLegacyServer({ port });
  t.match((await modernCall(a.url!)).content, [{ type: 'text' }], 'modern client, rolled-back upstream');
  const rolledBack = await until(() => legacyCall(b.url!), { what: 'a legacy client served after the rollback' });
  t.match(rolledBack.content, [{ type: 'text' }], 'legacy client, rolled-back upstream');
  t.match(
    (await modernCall(b.url!)).content,
    [{ type: 'text' }],
    'modern client, rolled-back upstream, its other replica',
  );
});
