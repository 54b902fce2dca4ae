// subscriptions/listen [SUBS] through Causeway to the legacy fixture: the real 2026-07-28 client
// (@modelcontextprotocol/client 2.4.0) for behaviour, raw HTTP for the wire shapes (ack first,
// subscription id with its type kept, keep-alive comments, the closing result on drain), and the
// fixture's counters for what reaches the upstream (resources/subscribe once per URI,
// resources/unsubscribe after the last listener leaves).

import t, { type Test } from 'tap';
import { Client, StreamableHTTPClientTransport, type McpSubscription } from '@modelcontextprotocol/client';
import { startLegacyServer, type LegacyServerHandle } from '../fixtures/legacy-server.js';
import { startCauseway, type Settings } from '../helpers/causeway.js';
import { SseReader } from '../helpers/sse.js';
import { until } from '../helpers/until.js';
import { assertRpcError, modernBody, modernHeaders, post, toolCall, type JsonObject } from './wire.js';
import { callStreamUpstream } from './upstreams.js';

const WATCHED = 'test://watched-resource';
const SID = 'io.modelcontextprotocol/subscriptionId';

const upstream = await startLegacyServer();
const causeway = await startCauseway({
  'upstream.url': upstream.url,
  'log.level': 'warn',
  'subscriptions.keepAliveMs': 150,
});
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

interface Seen {
  tools: number;
  prompts: number;
  updated: string[];
}

async function modernClient(t: Test, url = causeway.url): Promise<Client & { seen: Seen }> {
  const client = new Client(
    { name: 'listen-e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const seen: Seen = { tools: 0, prompts: 0, updated: [] };
  client.setNotificationHandler('notifications/tools/list_changed', () => void (seen.tools += 1));
  client.setNotificationHandler('notifications/prompts/list_changed', () => void (seen.prompts += 1));
  client.setNotificationHandler('notifications/resources/updated', (n) => void seen.updated.push(n.params.uri));
  t.teardown(() => client.close());
  return Object.assign(client, { seen });
}

/** Listen streams open on the shared Causeway, as its metrics say. */
async function listenStreams(): Promise<number> {
  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  return Number(/^causeway_listen_streams (\d+)$/m.exec(text)?.[1]);
}

const count = (h: LegacyServerHandle, method: string) => h.stats().requestsByMethod[method] ?? 0;

async function trigger(url: string, tool: string): Promise<void> {
  const { body, headers } = toolCall(tool, {}, `trigger-${tool}`);
  const res = await post(url, body, headers);
  if (res.status !== 200) throw new Error(`${tool} answered HTTP ${res.status}: ${res.text}`);
}

/** A listen request read event by event off the raw SSE stream. */
async function rawListen(
  url: string,
  id: string | number,
  notifications: Record<string, unknown>,
  extraHeaders: Record<string, string> = {},
) {
  const abort = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...modernHeaders('subscriptions/listen'), ...extraHeaders },
    body: JSON.stringify(modernBody('subscriptions/listen', { notifications } as never, id)),
    signal: abort.signal,
  });
  const stream = new SseReader(res.body!);
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    /** The next JSON-RPC message; undefined once the stream ended. Fails after `ms` of silence. */
    next: (ms = 5000): Promise<any | undefined> => {
      let timer: NodeJS.Timeout | undefined;
      const silence = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no listen-stream message within ${ms} ms`)), ms);
      });
      return Promise.race([stream.nextMessage(), silence]).finally(() => clearTimeout(timer));
    },
    get comments() {
      return stream.comments;
    },
    close: () => abort.abort(),
  };
}

t.test('modern_client-to-legacy_upstream-listen-list-changed-filtered', async (t) => {
  const both = await modernClient(t);
  const promptsOnly = await modernClient(t);
  const a = await both.listen({ toolsListChanged: true, promptsListChanged: true });
  const b = await promptsOnly.listen({ promptsListChanged: true });
  t.same(
    a.honoredFilter,
    { toolsListChanged: true, promptsListChanged: true },
    'the fixture declares both listChanged',
  );
  t.same(b.honoredFilter, { promptsListChanged: true });

  await both.callTool({ name: 'test_trigger_tool_change', arguments: {} });
  await until(() => both.seen.tools === 1, { what: 'tools/list_changed' });
  await both.callTool({ name: 'test_trigger_prompt_change', arguments: {} });
  await until(() => both.seen.prompts === 1 && promptsOnly.seen.prompts === 1, {
    what: 'prompts/list_changed on both streams',
  });
  // One upstream stream feeds both in order: had the tools change been let through to b, it would have come first.
  t.equal(promptsOnly.seen.tools, 0, 'a stream that did not opt in gets no tools/list_changed');
  t.equal(both.seen.tools, 1, 'each change once');
  await a.close();
  await b.close();
  t.equal(await a.closed, 'local');
});

t.test('modern_client-to-legacy_upstream-listen-resource-updated', async (t) => {
  const watcher = await modernClient(t);
  const other = await modernClient(t);
  const subscribesBefore = count(upstream, 'resources/subscribe');
  const a = await watcher.listen({ resourceSubscriptions: [WATCHED] });
  const b = await other.listen({ resourceSubscriptions: ['test://static-text'], toolsListChanged: true });
  t.same(a.honoredFilter, { resourceSubscriptions: [WATCHED] }, 'the fixture declares resources.subscribe');
  t.same(b.honoredFilter, { toolsListChanged: true, resourceSubscriptions: ['test://static-text'] });
  t.equal(count(upstream, 'resources/subscribe'), subscribesBefore + 2, 'one upstream subscribe per URI');

  await watcher.callTool({ name: 'test_trigger_resource_update', arguments: {} });
  await until(() => watcher.seen.updated.length === 1, { what: 'resources/updated' });
  t.same(watcher.seen.updated, [WATCHED]);
  await watcher.callTool({ name: 'test_trigger_tool_change', arguments: {} });
  await until(() => other.seen.tools === 1, { what: 'tools/list_changed on the other stream' });
  t.same(other.seen.updated, [], 'no resources/updated for a URI the stream did not name');
  t.equal(watcher.seen.tools, 0, 'nor list changes it did not ask for');
  await a.close();
  await b.close();
});

t.test('modern_client-to-legacy_upstream-listen-disconnect-unsubscribes-after-last', async (t) => {
  const one = await modernClient(t);
  const two = await modernClient(t);
  const subscribes = count(upstream, 'resources/subscribe');
  const unsubscribes = count(upstream, 'resources/unsubscribe');
  const a = await one.listen({ resourceSubscriptions: [WATCHED] });
  const b = await two.listen({ resourceSubscriptions: [WATCHED], promptsListChanged: true });
  t.equal(count(upstream, 'resources/subscribe'), subscribes + 1, 'shared by both listeners');

  const open = await listenStreams();
  await a.close();
  // Proof the close was handled: Causeway counts one stream fewer, and an update sent after that
  // reaches the other listener. An unsubscribe would have gone upstream by then.
  await until(async () => (await listenStreams()) < open, { what: 'Causeway to let the closed listener go' });
  await one.callTool({ name: 'test_trigger_resource_update', arguments: {} });
  await until(() => two.seen.updated.length === 1, { what: 'resources/updated for the remaining listener' });
  t.same(one.seen.updated, [], 'nothing for a closed subscription');
  t.equal(count(upstream, 'resources/unsubscribe'), unsubscribes, 'still held by the other listener');

  await b.close();
  await until(() => count(upstream, 'resources/unsubscribe') === unsubscribes + 1, {
    what: 'resources/unsubscribe upstream',
  });
  await new Promise((r) => setTimeout(r, 200)); // negative check: no second unsubscribe follows
  t.equal(count(upstream, 'resources/unsubscribe'), unsubscribes + 1, 'exactly once');
});

t.test('modern_client-to-legacy_upstream-listen-wire-shape', async (t) => {
  const numeric = await rawListen(causeway.url, 7, {
    toolsListChanged: true,
    resourcesListChanged: false,
    resourceSubscriptions: [],
  });
  t.equal(numeric.status, 200);
  t.match(numeric.contentType, /^text\/event-stream/);
  t.same(
    await numeric.next(),
    {
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { [SID]: 7 }, notifications: { toolsListChanged: true, resourceSubscriptions: [] } },
    },
    'the acknowledgment first, naming what will be honoured; the id stays a number',
  );
  const named = await rawListen(causeway.url, 'sub-a', { toolsListChanged: true });
  t.same((await named.next())?.params?._meta, { [SID]: 'sub-a' }, 'a string id stays a string');

  await trigger(causeway.url, 'test_trigger_tool_change');
  t.same(await numeric.next(), {
    jsonrpc: '2.0',
    method: 'notifications/tools/list_changed',
    params: { _meta: { [SID]: 7 } },
  });
  t.same(await named.next(), {
    jsonrpc: '2.0',
    method: 'notifications/tools/list_changed',
    params: { _meta: { [SID]: 'sub-a' } },
  });
  // Keep-alives every 150 ms come from a timer in this process, due before this one.
  await new Promise((r) => setTimeout(r, 400)); // lower bound: a keep-alive or two between events
  await trigger(causeway.url, 'test_trigger_prompt_change');
  await trigger(causeway.url, 'test_trigger_tool_change');
  t.same((await numeric.next())?.method, 'notifications/tools/list_changed', 'the prompts change was filtered out');
  t.ok(numeric.comments >= 1, `keep-alive comments between events (${numeric.comments})`);
  numeric.close();
  named.close();
});

t.test('modern_client-to-causeway-listen-rejections', async (t) => {
  const missing = await post(
    causeway.url,
    modernBody('subscriptions/listen', {}, 1),
    modernHeaders('subscriptions/listen'),
  );
  assertRpcError(t, missing, { status: 400, code: -32602, id: 1 });
  const tasks = await post(
    causeway.url,
    modernBody('subscriptions/listen', { notifications: { taskIds: ['t1'] } }, 2),
    modernHeaders('subscriptions/listen'),
  );
  assertRpcError(t, tasks, {
    status: 400,
    code: -32021,
    id: 2,
    data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
  });
});

t.test('modern_client-to-causeway-listen-bounds', async (t) => {
  const bounded = await startCauseway({
    'upstream.url': upstream.url,
    'log.level': 'warn',
    'principal.mode': 'header',
    'principal.hashSecret': 'listen-bounds-secret-0123',
    'subscriptions.maxListeners': 2,
    'subscriptions.maxPerPrincipal': 1,
  } satisfies Settings);
  t.teardown(() => bounded.close());
  const as = (p: string) => ({ 'x-causeway-principal': p });
  const a1 = await rawListen(bounded.url, 1, { toolsListChanged: true }, as('alice'));
  t.equal((await a1.next())?.method, 'notifications/subscriptions/acknowledged');
  const a2 = await post(bounded.url, modernBody('subscriptions/listen', { notifications: {} }, 2), {
    ...modernHeaders('subscriptions/listen'),
    ...as('alice'),
  });
  assertRpcError(t, a2, { status: 503, code: -32603, id: 2 });
  const b1 = await rawListen(bounded.url, 3, {}, as('bob'));
  t.equal(
    (await b1.next())?.method,
    'notifications/subscriptions/acknowledged',
    'another principal has its own allowance',
  );
  const c1 = await post(bounded.url, modernBody('subscriptions/listen', { notifications: {} }, 4), {
    ...modernHeaders('subscriptions/listen'),
    ...as('carol'),
  });
  assertRpcError(t, c1, { status: 503, code: -32603, id: 4 });

  a1.close();
  const again = await until(
    async () => {
      const r = await rawListen(bounded.url, 5, {}, as('alice'));
      return r.status === 200 && r;
    },
    { what: 'the slot to be freed' },
  );
  t.ok(again, 'a disconnect frees the slot');
  t.equal((await again.next())?.method, 'notifications/subscriptions/acknowledged');
  again.close();
  b1.close();
});

t.test('modern_client-to-legacy_upstream-listen-graceful-end-on-drain', async (t) => {
  // A drain timeout no test reaches: a drain held by the listen streams never ends (the test
  // times out), and streams cut at the timeout would not see the closing result anyway.
  const draining = await startCauseway({
    'upstream.url': upstream.url,
    'log.level': 'warn',
    'drain.timeoutMs': 600_000,
  });
  let closed = false;
  t.teardown(() => (closed ? undefined : draining.close()));
  const client = await modernClient(t, draining.url);
  const sub: McpSubscription = await client.listen({ toolsListChanged: true, resourceSubscriptions: [WATCHED] });
  const raw = await rawListen(draining.url, 42, { promptsListChanged: true });
  t.equal((await raw.next())?.method, 'notifications/subscriptions/acknowledged');
  const unsubscribes = count(upstream, 'resources/unsubscribe');

  const started = Date.now();
  await draining.close();
  closed = true;
  t.comment(`drained in ${Date.now() - started} ms`);
  t.equal(await sub.closed, 'graceful', 'the client saw the closing result');
  t.same(await raw.next(), { jsonrpc: '2.0', id: 42, result: { resultType: 'complete', _meta: { [SID]: 42 } } });
  t.equal(await raw.next(), undefined, 'then the stream ends');
  t.equal(count(upstream, 'resources/unsubscribe'), unsubscribes + 1, 'subscriptions released upstream');
});

t.test('modern_client-to-legacy_upstream-listen-changes-on-call-streams-and-stale-catalog', async (t) => {
  const proxy = await startCauseway({ 'upstream.url': await callStreamUpstream(t), 'log.level': 'warn' });
  t.teardown(() => proxy.close());
  const listen = await rawListen(proxy.url, 'calls', { toolsListChanged: true, promptsListChanged: true });
  t.same((await listen.next())?.params?.notifications, { toolsListChanged: true, promptsListChanged: true });

  const geo = (id: number) => {
    const { body, headers } = toolCall('geo', { region: 'eu' } as JsonObject, id);
    return post(proxy.url, body, headers);
  };
  assertRpcError(t, await geo(1), { status: 400, code: -32020, id: 1 });

  await trigger(proxy.url, 'flip');
  t.same(
    await listen.next(),
    { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [SID]: 'calls' } } },
    'a change sent on a tools/call stream reaches the listener',
  );
  const after = await geo(2);
  t.equal(after.status, 200, 'the tool catalog was re-read after tools/list_changed: Region is no longer required');

  const prompts = await post(proxy.url, modernBody('prompts/list', {}, 3), modernHeaders('prompts/list'));
  t.equal(prompts.status, 200);
  t.same((await listen.next())?.method, 'notifications/prompts/list_changed', 'and one sent on a list call too');
  listen.close();
});
