// The gateway cache, through two replicas on one Redis in front of the legacy fixture (SDK
// 1.32.2), with the real 2026 client (@modelcontextprotocol/client 2.4.0): repeated lists reach
// the upstream once per scope, a public answer is shared by every principal and replica, a
// private one never leaves its principal (header principals here; tokens of a real authorization
// server at the end), a list_changed heard through one replica makes the other's next list fresh,
// an input_required answer is never kept, and a replica that read no list names a call in its
// metrics from the catalog the other one filled. In front of a 2026 server (SDK 2.x) its own
// hints decide, for modern clients and for the legacy clients Causeway answers itself.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport, type ResponseCacheStore } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { jwtFace, startAuthorizationServer } from '../helpers/authorization-server.js';
import { startCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { modernBody, modernHeaders, send } from './wire.js';

const PRINCIPAL = 'x-causeway-principal';

const redis = await startRedis(t);
const fixture = await startLegacyServer();
t.teardown(() => fixture.close());

const settings = {
  'upstream.url': fixture.url,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
  'principal.mode': 'header',
  'principal.hashSecret': 'gateway-cache-test-secret-0123456789',
  'cache.store': 'redis',
  'cache.methods': JSON.stringify({
    'tools/list': { ttlMs: 60_000, scope: 'public' },
    'prompts/list': { ttlMs: 60_000, scope: 'private' },
    'resources/read': { ttlMs: 60_000, scope: 'private' },
  }),
  // Every pooled session's GET stream is held, so the upstream's list_changed reaches Causeway.
  'upstream.standingStream': 'always',
  'log.accessSample': 1,
};
const replicas: RunningCauseway[] = [await startCauseway(settings), await startCauseway(settings)];
const [a, b] = replicas as [RunningCauseway, RunningCauseway];
t.teardown(() => Promise.all(replicas.map((r) => r.close())));

/** The client's own response cache, kept empty: every list these tests make reaches Causeway. */
function forgetting(): ResponseCacheStore {
  let stamp = 0;
  return {
    get: () => undefined,
    set: () => ++stamp,
    delete: () => undefined,
    evict: () => undefined,
    clear: () => undefined,
  };
}

async function client(
  via: RunningCauseway,
  principal: string,
  capabilities: Record<string, object> = {},
): Promise<Client> {
  const c = new Client(
    { name: 'gateway-cache', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities, responseCacheStore: forgetting() },
  );
  await c.connect(
    new StreamableHTTPClientTransport(new URL(via.url), { requestInit: { headers: { [PRINCIPAL]: principal } } }),
  );
  t.teardown(() => c.close());
  return c;
}

const upstreamCount = (method: string): number => fixture.stats().requestsByMethod[method] ?? 0;

async function metrics(via: RunningCauseway): Promise<string> {
  return (await fetch(`${via.adminUrl}/metrics`)).text();
}

/** The value of a series (0 when absent): every given label must match. */
function series(text: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

const toolNames = async (c: Client) => (await c.listTools()).tools.map((x) => x.name);
const readText = async (c: Client, uri: string) => {
  const r = await c.readResource({ uri });
  const first = r.contents[0] as { text?: string } | undefined;
  return first?.text;
};

t.test(
  'repeated lists reach the upstream once per scope; a public answer serves every principal on every replica',
  async (t) => {
    const alice = [await client(a, 'alice'), await client(b, 'alice')];
    const bob = [await client(a, 'bob'), await client(b, 'bob')];
    const tools = upstreamCount('tools/list');
    const first = await toolNames(alice[0]!);
    for (let i = 0; i < 20; i++) t.same(await toolNames(alice[i % 2]!), first, `alice's list ${i + 1} is the same`);
    for (let i = 0; i < 5; i++) t.same(await toolNames(bob[i % 2]!), first, `bob's list ${i + 1} is the same`);
    t.equal(
      upstreamCount('tools/list') - tools,
      1,
      'public: 26 lists by two principals on two replicas, one upstream tools/list',
    );

    const prompts = upstreamCount('prompts/list');
    for (let i = 0; i < 5; i++) await alice[0]!.listPrompts();
    t.equal(
      upstreamCount('prompts/list') - prompts,
      1,
      'private: five of one principal on one replica, one upstream prompts/list',
    );
    for (let i = 0; i < 3; i++) await bob[0]!.listPrompts();
    t.equal(
      upstreamCount('prompts/list') - prompts,
      2,
      "another principal is not served the first one's private list: one more",
    );

    const ma = await metrics(a);
    t.ok(
      series(ma, 'causeway_cache_hits_total', { method: 'tools/list', scope: 'public' }) >= 9,
      'hits counted by method and scope',
    );
    t.ok(series(ma, 'causeway_cache_hits_total', { method: 'prompts/list', scope: 'private' }) >= 6);
    t.ok(series(ma, 'causeway_cache_misses_total', { method: 'prompts/list' }) >= 2);
    t.ok(
      series(ma, 'causeway_cache_bytes', { method: 'tools/list', scope: 'public' }) > 0,
      'bytes held, by method and scope',
    );
    t.match(
      a.logs.filter((l) => l.includes('"method":"tools/list"') && l.includes('"msg":"request"')).join('\n'),
      /"cache":"hit"/,
      'the access line says cache=hit',
    );
  },
);

t.test('a private answer never crosses principals (header principals)', async (t) => {
  const alice = await client(a, 'alice-2');
  const bob = await client(a, 'bob-2');
  const reads = upstreamCount('resources/read');
  const hers = await readText(alice, 'test://session');
  t.match(hers, /^session /);
  t.equal(await readText(alice, 'test://session'), hers, 'her second read: her own answer');
  t.equal(upstreamCount('resources/read') - reads, 1, 'her second read came from the cache');
  const his = await readText(bob, 'test://session');
  t.not(his, hers, "his read on the same replica is his own session's answer, not hers");
  t.equal(upstreamCount('resources/read') - reads, 2, 'his read went upstream');
  // The same principal with other client capabilities has another upstream session: keyed apart too.
  const aliceAsks = await client(a, 'alice-2', { elicitation: {} });
  t.not(
    await readText(aliceAsks, 'test://session'),
    hers,
    "another session of hers (other capabilities) is not served the first one's",
  );
});

t.test("a list_changed heard through one replica makes the other's next list fresh", async (t) => {
  const onA = await client(a, 'carol');
  const onB = await client(b, 'carol');
  const before = await toolNames(onB);
  t.same(await toolNames(onA), before, 'both replicas serve the kept list');
  const invalidatedOnB = series(await metrics(b), 'causeway_cache_drops_total', {
    method: 'tools/list',
    reason: 'invalidated',
  });
  const had = before.includes('test_dynamic_tool');
  const started = Date.now();
  await onA.callTool({ name: 'test_trigger_tool_change', arguments: {} });
  let after: string[] = before;
  await until(
    async () => {
      after = await toolNames(onB);
      return after.includes('test_dynamic_tool') !== had;
    },
    { what: 'replica B serves the changed list' },
  );
  t.comment(`the other replica served the changed list ${Date.now() - started} ms after the change was asked for`);
  t.not(after.includes('test_dynamic_tool'), had, 'the dynamic tool came or went');
  t.ok(
    series(await metrics(b), 'causeway_cache_drops_total', { method: 'tools/list', reason: 'invalidated' }) >
      invalidatedOnB,
    'B dropped its entry when told',
  );
  // Back as it was, for the other tests.
  await onA.callTool({ name: 'test_trigger_tool_change', arguments: {} });
  await until(async () => (await toolNames(onB)).includes('test_dynamic_tool') === had, {
    what: 'the list back as it was',
  });
});

t.test("an input_required answer is never kept, nor a retry's", async (t) => {
  const reads = upstreamCount('resources/read');
  const ask = { uri: 'test://ask-first' };
  const meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
  const first = await send(a.url, {
    body: modernBody('resources/read', ask, 1, meta),
    headers: { ...modernHeaders('resources/read', ask.uri), [PRINCIPAL]: 'dave' },
  });
  t.equal(first.json?.result?.resultType, 'input_required');
  const second = await send(a.url, {
    body: modernBody('resources/read', ask, 2, meta),
    headers: { ...modernHeaders('resources/read', ask.uri), [PRINCIPAL]: 'dave' },
  });
  t.equal(
    second.json?.result?.resultType,
    'input_required',
    'the same request again: asked again, not served the kept question',
  );
  t.equal(upstreamCount('resources/read') - reads, 2, 'both reached the upstream');
  // The retry carries the answers: it is answered, and not kept either.
  const keys = Object.keys(second.json.result.inputRequests as object);
  const retry = modernBody(
    'resources/read',
    {
      ...ask,
      inputResponses: Object.fromEntries(keys.map((k) => [k, { action: 'accept', content: { part: 'two' } }])),
      requestState: second.json.result.requestState,
    },
    3,
    meta,
  );
  const answered = await send(a.url, {
    body: retry,
    headers: { ...modernHeaders('resources/read', ask.uri), [PRINCIPAL]: 'dave' },
  });
  t.equal(answered.json?.result?.contents?.[0]?.text, 'part two');
  const third = await send(a.url, {
    body: modernBody('resources/read', ask, 4, meta),
    headers: { ...modernHeaders('resources/read', ask.uri), [PRINCIPAL]: 'dave' },
  });
  t.equal(third.json?.result?.resultType, 'input_required', 'after an answered retry the question is asked again');
});

t.test(
  'a replica that read no list names a call in its metrics, and checks its headers with no list of its own',
  async (t) => {
    // The list changes of the test before reach each replica on every session's stream, some of
    // them late: the kept list is read again until a look finds it kept and no replica dropping it.
    const readers = [await client(a, 'frank'), await client(b, 'frank')];
    const dropped = async () => {
      let n = 0;
      for (const r of replicas) n += series(await metrics(r), 'causeway_cache_drops_total', { method: 'tools/list' });
      return n;
    };
    await until(
      async () => {
        const [drops, lists] = [await dropped(), upstreamCount('tools/list')];
        for (const r of readers) await toolNames(r);
        return (await dropped()) === drops && upstreamCount('tools/list') === lists;
      },
      { what: 'the kept tools/list settled after the changes' },
    );
    // B served its lists from what A read (Redis): it never read one itself. A third replica starts now.
    const c = await startCauseway(settings);
    t.teardown(() => c.close());
    for (const [via, label] of [
      [b, 'B (running when A learned the names)'],
      [c, 'C (started after)'],
    ] as const) {
      const caller = await client(via, `erin-${label[0]}`);
      const lists = upstreamCount('tools/list');
      // An argument value: the tool's Mcp-Param annotations must be known first, read from the kept list.
      await caller.callTool({ name: 'echo', arguments: { text: 'hi' } });
      t.ok(
        series(await metrics(via), 'causeway_modern_requests_total', { method: 'tools/call', name: 'echo' }) >= 1,
        `${label} names the call`,
      );
      t.equal(
        upstreamCount('tools/list'),
        lists,
        `${label} learned the tool's annotations from the kept list, with no tools/list of its own`,
      );
    }
  },
);

t.test('with tokens: a private entry is kept per access token, and never served to another principal', async (t) => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const as = await startAuthorizationServer(t, {
    resources: { [url]: 'jwt' },
    scopes: ['mcp'],
    clients: ['alice', 'bob'],
  });
  const gw = await startCauseway({
    ...jwtFace(as, port, url),
    'upstream.url': fixture.url,
    'cache.methods': JSON.stringify({ 'resources/read': { ttlMs: 60_000, scope: 'private' } }),
  });
  t.teardown(() => gw.close());
  const read = async (token: string, id: number) => {
    const r = await send(gw.url, {
      body: modernBody('resources/read', { uri: 'test://session' }, id),
      headers: { ...modernHeaders('resources/read', 'test://session'), authorization: `Bearer ${token}` },
    });
    t.equal(r.status, 200);
    return r.json?.result?.contents?.[0]?.text as string;
  };
  const aliceToken = await as.token({ client: 'alice', resource: url, scope: 'mcp' });
  const reads = upstreamCount('resources/read');
  const hers = await read(aliceToken, 1);
  t.equal(await read(aliceToken, 2), hers);
  t.equal(upstreamCount('resources/read') - reads, 1, 'the same token: served from the cache');
  const aliceAgain = await as.token({ client: 'alice', resource: url, scope: 'mcp' });
  t.not(aliceAgain, aliceToken);
  t.equal(await read(aliceAgain, 3), hers, 'her new token reaches her own upstream session');
  t.equal(upstreamCount('resources/read') - reads, 2, 'a different access token is a different cache');
  const bobToken = await as.token({ client: 'bob', resource: url, scope: 'mcp' });
  t.not(await read(bobToken, 4), hers, 'another principal is never served her answer');
  t.equal(upstreamCount('resources/read') - reads, 3);
});

t.test(
  'in front of a 2026 server: its own ttlMs and cacheScope decide, ' +
    'for modern clients and the legacy clients Causeway answers',
  async (t) => {
    const modern = await startModernServer({
      cacheHints: {
        'tools/list': { ttlMs: 60_000, cacheScope: 'public' },
        'prompts/list': { ttlMs: 0, cacheScope: 'public' },
      },
    });
    t.teardown(() => modern.close());
    const gw = await startCauseway({
      'upstream.url': modern.url,
      'upstream.era': 'modern',
      'principal.mode': 'header',
      'principal.hashSecret': 'gateway-cache-test-secret-0123456789',
    });
    t.teardown(() => gw.close());
    const lists = (method: string) => modern.stats().requestsByMethod[method] ?? 0;
    const c = await client(gw, 'frank');
    const first = await c.listTools();
    t.ok(typeof first.ttlMs === 'number' && first.ttlMs <= 60_000, "the upstream's ttlMs, never more");
    for (let i = 0; i < 4; i++) t.same((await c.listTools()).tools, first.tools);
    t.equal(lists('tools/list'), 1, 'five lists, one upstream tools/list');
    const again = await send(gw.url, {
      body: modernBody('tools/list', {}, 9),
      headers: { ...modernHeaders('tools/list'), [PRINCIPAL]: 'grace' },
    });
    t.equal(again.json.result.cacheScope, 'public');
    t.ok(
      again.json.result.ttlMs > 0 && again.json.result.ttlMs <= 60_000,
      `a hit carries what is left of the upstream's ttlMs (${again.json.result.ttlMs})`,
    );
    t.equal(lists('tools/list'), 1, 'public: another principal served the kept list');
    // The legacy face Causeway gives this server answers from the same entry.
    const legacy = new LegacyClient({ name: 'gateway-cache-legacy', version: '1.0.0' });
    await legacy.connect(new LegacyTransport(new URL(gw.url), { requestInit: { headers: { [PRINCIPAL]: 'heidi' } } }));
    t.teardown(() => legacy.close());
    t.same(
      (await legacy.listTools()).tools.map((x) => x.name).sort(),
      first.tools.map((x) => x.name).sort(),
      'a legacy client gets the same tools',
    );
    t.equal(lists('tools/list'), 1, 'and no upstream tools/list');
    // ttlMs 0: never kept.
    await c.listPrompts();
    await c.listPrompts();
    t.equal(lists('prompts/list'), 2, 'an answer with ttlMs 0 is asked for every time');
  },
);
