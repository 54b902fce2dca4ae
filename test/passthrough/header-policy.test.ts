// One header policy on both paths: a client's credentials reach the upstream only when that
// upstream's forwardHeaders names them exactly; tracing headers pass by default; the operator's
// upstream.headers win. Checked on the headers the real SDK fixture received.

import t, { type Test } from 'tap';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway, type Settings } from '../helpers/causeway.js';
import { post, rawExchange, toolCall } from '../e2e/wire.js';

const CLIENT_HEADERS = {
  authorization: 'Bearer client-token',
  'proxy-authorization': 'Basic cHJveHk6cHc=',
  cookie: 'sid=client-cookie',
  'x-api-key': 'client-key',
  'x-tenant': 'acme',
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  baggage: 'userId=alice',
};
const CREDENTIALS = ['authorization', 'proxy-authorization', 'cookie', 'x-api-key'];

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());

async function causewayWith(t: Test, settings: Settings) {
  const c = await startCauseway({ 'upstream.url': upstream.url, ...settings });
  t.teardown(() => c.close());
  return c;
}

/** The headers the upstream got for a modern tools/call, and for a legacy one on its own session. */
async function seenOnBothPaths(t: Test, url: string, extra: Record<string, string> = {}) {
  const call = toolCall('echo', { text: 'hi' });
  const modern = await post(url, call.body, { ...call.headers, ...CLIENT_HEADERS, ...extra });
  t.equal(modern.status, 200, 'modern call answered');
  const modernSeen = { ...upstream.stats().lastHeaders };

  const legacyHeaders = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...CLIENT_HEADERS,
    ...extra,
  };
  const init = await post(
    url,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'legacy', version: '1' } },
    },
    legacyHeaders,
  );
  t.equal(init.status, 200, 'legacy initialize answered');
  const session = String(init.headers['mcp-session-id']);
  const withSession = { ...legacyHeaders, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, withSession);
  const legacy = await post(
    url,
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } },
    withSession,
  );
  t.equal(legacy.status, 200, 'legacy call answered');
  const legacySeen = { ...upstream.stats().lastHeaders };
  return { modern: modernSeen, legacy: legacySeen };
}

t.test('by default no client credential reaches the upstream, on either path; tracing headers do', async (t) => {
  const c = await causewayWith(t, {});
  const seen = await seenOnBothPaths(t, c.url);
  for (const [path, headers] of Object.entries(seen)) {
    for (const h of CREDENTIALS) t.notOk(h in headers, `${path}: ${h} is not forwarded`);
    t.notOk('x-tenant' in headers, `${path}: an unlisted header is not forwarded`);
    t.equal(headers.traceparent, CLIENT_HEADERS.traceparent, `${path}: traceparent is forwarded`);
    t.equal(headers.baggage, CLIENT_HEADERS.baggage, `${path}: baggage is forwarded`);
    t.equal(headers['mcp-method'], 'tools/call', `${path}: protocol headers still go`);
  }
});

t.test('a credential named in forwardHeaders goes on both paths; a prefix never covers one', async (t) => {
  const c = await causewayWith(t, { 'upstream.forwardHeaders': 'authorization,traceparent,x-*' });
  const seen = await seenOnBothPaths(t, c.url);
  for (const [path, headers] of Object.entries(seen)) {
    t.equal(headers.authorization, CLIENT_HEADERS.authorization, `${path}: authorization is forwarded when named`);
    t.equal(headers['x-tenant'], 'acme', `${path}: x-* covers x-tenant`);
    t.notOk('x-api-key' in headers, `${path}: x-* does not cover the x-api-key credential`);
    t.notOk('cookie' in headers, `${path}: cookie is not named, so not forwarded`);
    t.notOk('baggage' in headers, `${path}: the list replaces the default`);
  }
});

t.test('configured credential headers and the principal header are credentials too', async (t) => {
  const c = await causewayWith(t, {
    'upstream.forwardHeaders': 'x-*',
    'security.credentialHeaders': 'x-tenant',
    'principal.mode': 'header',
    'principal.header': 'x-user',
    'principal.hashSecret': 'header-policy-secret',
  });
  const seen = await seenOnBothPaths(t, c.url, { 'x-user': 'alice', 'x-trace-tag': 'blue' });
  for (const [path, headers] of Object.entries(seen)) {
    t.notOk('x-tenant' in headers, `${path}: a configured credential header is not covered by x-*`);
    t.notOk('x-user' in headers, `${path}: the principal header is not covered by x-*`);
    t.equal(headers['x-trace-tag'], 'blue', `${path}: other x-* headers are`);
  }
});

t.test("the operator's upstream.headers win over a forwarded client header; hop-by-hop never goes", async (t) => {
  const c = await causewayWith(t, {
    'upstream.forwardHeaders': 'authorization,te,connection,keep-alive',
    'upstream.headers': 'authorization=Bearer upstream-own',
  });
  const seen = await seenOnBothPaths(t, c.url, { 'keep-alive': 'timeout=5' });
  for (const [path, headers] of Object.entries(seen)) {
    t.equal(headers.authorization, 'Bearer upstream-own', `${path}: upstream.headers wins`);
    t.not(headers['keep-alive'], 'timeout=5', `${path}: a hop-by-hop header named in the list is still not forwarded`);
  }
});

t.test('a forwardHeaders entry that is no header name stops start-up', async (t) => {
  const problems = (flags: string[]) => {
    try {
      loadConfig(flags, {});
      return '';
    } catch (err) {
      t.ok(err instanceof ConfigError, 'a ConfigError');
      return (err as Error).message;
    }
  };
  const one = (list: string) =>
    problems(['--upstream.url', 'http://127.0.0.1:1/mcp', '--upstream.forwardHeaders', list]);
  t.match(one('traceparent,x tenant'), /upstream\.forwardHeaders: .*x tenant/);
  t.match(one('x-*-id'), /upstream\.forwardHeaders: .*x-\*-id/);
  t.equal(one('traceparent,x-*,*'), '', 'names, prefixes and * are accepted');
  const upstreams = JSON.stringify({ a: { url: 'http://127.0.0.1:1/mcp', forwardHeaders: ['ok', 'not ok'] } });
  t.match(
    problems(['--upstreams', upstreams, '--mounts', JSON.stringify({ '/mcp': { upstreams: ['a'] } })]),
    /upstreams\.a\.forwardHeaders: .*not ok/,
  );
});

t.test(
  'Expect: 100-continue (curl sends it on bodies over 1 KiB) is not passed on, and the request is served',
  async (t) => {
    // Named in the list, it is still not passed on: it is about this hop.
    const c = await causewayWith(t, { 'upstream.forwardHeaders': 'traceparent,expect' });
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'curl', version: '8' } },
    });
    const raw = await rawExchange(
      c.port,
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${c.port}\r\nContent-Type: ` +
        `application/json\r\nAccept: application/json, text/event-stream\r\n` +
        `Expect: 100-continue\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    t.match(raw, /HTTP\/1\.1 200 OK/, 'the initialize is answered 200');
    t.notOk('expect' in upstream.stats().lastHeaders, 'the upstream did not get Expect');
  },
);
