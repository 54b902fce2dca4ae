// Upstream faults seen by a modern client: the upstream killed and restarted on the same port,
// the upstream forgetting its sessions, an upstream that never answers, one that answers garbage,
// and a client that leaves mid-call. Our own failures never blame the client: a 502 / 504-class
// answer with -32603 [style habit 1], the id echoed; a recovered session is a fresh one, so the
// per-session `counter` starts again from 1 and never skips or repeats.

import http from 'node:http';
import t, { type Test } from 'tap';
import { ERROR_TABLE } from '../../src/errors.js';
import { startCauseway } from '../helpers/causeway.js';
import { assertRpcError, firstText, post, toolCall, type JsonObject, type WireResponse } from './wire.js';
import { rawUpstream, spawnFixture, type FixtureProcess } from './upstreams.js';
import { until } from '../helpers/until.js';

async function fixture(t: Test, port = 0): Promise<FixtureProcess> {
  const f = await spawnFixture(port, { t });
  t.teardown(() => f.kill());
  return f;
}

async function causewayFor(t: Test, upstreamUrl: string, settings: Record<string, string | number> = {}) {
  const c = await startCauseway({ 'upstream.url': upstreamUrl, 'upstream.connectTimeoutMs': 500, ...settings });
  t.teardown(() => c.close());
  return c;
}

function call(url: string, name: string, args: JsonObject, id: string | number): Promise<WireResponse> {
  const { body, headers } = toolCall(name, args, id);
  return post(url, body, headers);
}

/** The exact body of one of our own failures: -32603, the table's message, the id echoed. */
function assertOwnFailure(
  t: Test,
  res: WireResponse,
  reason: 'upstream_unavailable' | 'upstream_timeout' | 'upstream_bad_response',
  id: string,
) {
  const row = ERROR_TABLE[reason];
  assertRpcError(t, res, { status: row.status, code: -32603, id });
  t.same(Object.keys(res.json ?? {}).sort(), ['error', 'id', 'jsonrpc'], 'nothing else in the body');
  const message = String(res.json?.error?.message);
  t.ok(
    message === row.message || message.startsWith(`${row.message}: `),
    `message is "${row.message}[: detail]" (got "${message}")`,
  );
}

t.test('modern_client-to-legacy_upstream-killed-then-restarted', async (t) => {
  const first = await spawnFixture(0, { t });
  const causeway = await causewayFor(t, first.url);
  const answers: Array<{ phase: string; res: WireResponse }> = [];
  const counter = async (phase: string, id: string) => {
    const res = await call(causeway.url, 'counter', {}, id);
    answers.push({ phase, res });
    return res;
  };

  t.equal(firstText(await counter('up', 'a1')), '1');
  t.equal(firstText(await counter('up', 'a2')), '2');

  await first.kill();
  for (const id of ['d1', 'd2', 'd3']) {
    const res = await counter('down', id);
    // upstream_unavailable (a refused connection), not upstream_timeout: nothing waited on the dead upstream.
    assertOwnFailure(t, res, 'upstream_unavailable', id);
  }

  const second = await fixture(t, first.port);
  t.equal(second.port, first.port, 'restarted on the same port');
  const r1 = await counter('restarted', 'r1');
  t.equal(r1.status, 200, 'served again after the restart');
  t.equal(firstText(r1), '1', 'a fresh upstream session: the counter starts again');
  t.equal(firstText(await counter('restarted', 'r2')), '2');
  const stats = await second.stats();
  t.equal(stats.initializeCount, 1, 'exactly one initialize on the restarted upstream');
  t.equal(stats.toolCalls.counter, 2, 'no call replayed on the restarted upstream');

  // Never a wrong answer: every reply is the next count of its session, or our own -32603.
  const wrong = answers.filter(({ phase, res }) =>
    phase === 'down' ? res.json?.error?.code !== -32603 || res.json?.result !== undefined : res.status !== 200,
  );
  t.same(
    wrong.map((w) => `${w.phase}:${w.res.text}`),
    [],
    'no wrong answers',
  );
  t.same(
    answers.filter((a) => a.phase !== 'down').map((a) => firstText(a.res)),
    ['1', '2', '1', '2'],
    'counts in order',
  );
});

// A tools/call that was already running when its upstream died must not be sent again to the
// restarted upstream: only a 404 to the call's own POST proves it never ran [style habit 5].
t.test('modern_client-to-legacy_upstream-killed-mid-call-no-replay', async (t) => {
  const first = await spawnFixture(0, { t });
  const causeway = await causewayFor(t, first.url);
  t.equal(firstText(await call(causeway.url, 'echo', { text: 'warm' }, 'warm')), 'warm');
  const inFlight = call(causeway.url, 'slow', { ms: 1000 }, 'mid-call');
  await until(async () => ((await first.stats()).toolCalls.slow ?? 0) > 0, { what: 'the call to reach the upstream' });
  await first.kill();
  const second = await fixture(t, first.port);
  const res = await inFlight;
  const stats = await second.stats();
  t.comment(`the interrupted call answered ${res.status} ${res.text}`);
  t.equal(stats.toolCalls.slow ?? 0, 0, 'the interrupted call was not replayed on the restarted upstream');
  t.equal(res.json?.error?.code, -32603, 'the interrupted call fails with -32603');
  t.equal(res.json?.id, 'mid-call', 'id echoed');
});

t.test('modern_client-to-legacy_upstream-session-forgotten-reinitializes', async (t) => {
  const upstream = await fixture(t);
  const causeway = await causewayFor(t, upstream.url);
  t.equal(firstText(await call(causeway.url, 'counter', {}, 1)), '1');
  t.equal(firstText(await call(causeway.url, 'counter', {}, 2)), '2');
  const before = (await upstream.stats()).initializeCount;
  t.ok((await upstream.expireSessions()) >= 1, 'the upstream forgot the session');

  const res = await call(causeway.url, 'counter', {}, 3);
  t.equal(res.status, 200, 'transparently re-initialized');
  t.equal(res.json?.id, 3);
  t.equal(firstText(res), '1', 'on a new session');
  t.equal(firstText(await call(causeway.url, 'counter', {}, 4)), '2');
  const after = await upstream.stats();
  t.equal(after.initializeCount, before + 1, 'exactly one new initialize');
  t.equal(after.toolCalls.counter, 4, 'the call the upstream refused with 404 ran once on the new session');
});

t.test('modern_client-to-hanging_upstream-times-out', async (t) => {
  const TIMEOUT = 400;
  for (const mode of ['hang-everything', 'hang-on-call'] as const) {
    const upstream = await rawUpstream(mode === 'hang-everything' ? { hangAll: true } : { onCall: () => undefined });
    t.teardown(() => upstream.close());
    const causeway = await causewayFor(t, upstream.url, { 'upstream.requestTimeoutMs': TIMEOUT });
    const res = await call(causeway.url, 'misbehave', {}, `hang-${mode}`);
    assertOwnFailure(t, res, 'upstream_timeout', `hang-${mode}`);
    t.ok(res.ms >= TIMEOUT - 50, `${mode}: 504 only once upstream.requestTimeoutMs had passed (${res.ms} ms)`);
    t.ok(
      upstream.methods.includes(mode === 'hang-everything' ? 'initialize' : 'tools/call'),
      `${mode}: the upstream was reached`,
    );
  }
});

t.test('modern_client-to-garbage_upstream-bad-gateway', async (t) => {
  const garbage: Record<string, (res: http.ServerResponse, msg: { id: unknown }) => void> = {
    'non-json-200': (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>this is not json</html>');
    },
    'json-without-id': (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', result: { content: [{ type: 'text', text: 'whose?' }] } }));
    },
    'json-with-another-id': (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 'not-yours', result: { content: [] } }));
    },
    'html-content-type': (res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html></html>');
    },
  };
  for (const [name, onCall] of Object.entries(garbage)) {
    const upstream = await rawUpstream({ onCall });
    t.teardown(() => upstream.close());
    const causeway = await causewayFor(t, upstream.url, { 'upstream.requestTimeoutMs': 2000 });
    const res = await call(causeway.url, 'misbehave', {}, name);
    t.comment(name);
    assertOwnFailure(t, res, 'upstream_bad_response', name);
    t.notOk(res.text.includes('whose?'), 'nothing of the garbage is relayed');
  }
});

/** Starts a tools/call and drops the connection after `afterMs`. */
function abandon(url: string, body: unknown, headers: Record<string, string>, afterMs: number): Promise<string> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const text = JSON.stringify(body);
    const req = http.request({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      method: 'POST',
      agent: false,
      headers: { ...headers, 'content-length': String(Buffer.byteLength(text)) },
    });
    req.on('response', (res) => resolve(`answered ${res.statusCode} before the abort`));
    req.on('error', () => resolve('aborted'));
    req.end(text);
    setTimeout(() => req.destroy(), afterMs);
  });
}

t.test('modern_client-to-legacy_upstream-client-disconnect-cancels', async (t) => {
  const upstream = await fixture(t);
  const causeway = await causewayFor(t, upstream.url);
  t.equal(firstText(await call(causeway.url, 'echo', { text: 'warm' }, 'warm')), 'warm');

  const variants: Array<{ name: string; meta: JsonObject }> = [
    { name: 'sse (progressToken)', meta: { progressToken: 'pt-1' } },
    { name: 'plain json', meta: {} },
  ];
  for (const v of variants) {
    const before = await upstream.stats();
    const { body, headers } = toolCall('slow', { ms: 5000 }, `slow-${v.name}`, v.meta);
    t.equal(await abandon(causeway.url, body, headers, 300), 'aborted', `${v.name}: the client left mid-call`);
    const after = await until(
      async () => {
        const now = await upstream.stats();
        return now.cancelled !== before.cancelled && now;
      },
      { what: `${v.name}: the cancellation upstream` },
    );
    const sent =
      (after.notificationsByMethod['notifications/cancelled'] ?? 0) -
      (before.notificationsByMethod['notifications/cancelled'] ?? 0);
    t.equal(after.toolCalls.slow ?? 0, (before.toolCalls.slow ?? 0) + 1, `${v.name}: the call reached the upstream`);
    t.equal(after.cancelled, before.cancelled + 1, `${v.name}: the upstream recorded a cancellation`);
    t.equal(sent, 1, `${v.name}: Causeway sent notifications/cancelled upstream`);
  }
  const still = await call(causeway.url, 'echo', { text: 'after' }, 'after');
  t.equal(firstText(still), 'after', 'the pooled session still works after the cancellations');
});
