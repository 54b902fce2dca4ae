// Several upstreams in one config, each at its own path with its own headers, timeouts and cache
// hints; the real 2026 client and the legacy SDK client on each mount.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { connectModern } from '../helpers/clients.js';
import { modernBody, modernHeaders, post } from '../e2e/wire.js';

const a = await startLegacyServer({ label: 'a' });
const b = await startLegacyServer({ label: 'b' });
const causeway = await startCauseway({
  upstreams: JSON.stringify({
    alpha: { url: a.url, headers: { 'x-upstream-key': 'key-a' }, cache: { ttlMs: 1000 } },
    beta: {
      url: b.url,
      headers: { 'x-upstream-key': 'key-b' },
      requestTimeoutMs: 5000,
      cache: { ttlMs: 2000, scope: 'public' },
    },
  }),
  mounts: JSON.stringify({ '/alpha/mcp': { upstreams: ['alpha'] }, '/beta/mcp': { upstreams: ['beta'] } }),
});
t.teardown(async () => {
  await causeway.close();
  await a.close();
  await b.close();
});
const origin = causeway.app.origin!;

const modernClient = (path: string) => connectModern(t, new URL(path, origin), 'mounts');

t.test('each mount reaches its own upstream', async (t) => {
  const alpha = await modernClient('/alpha/mcp');
  const beta = await modernClient('/beta/mcp');
  t.equal(alpha.getServerVersion()?.name, 'causeway-legacy-fixture-a');
  t.equal(beta.getServerVersion()?.name, 'causeway-legacy-fixture-b');
  const alphaTools = (await alpha.listTools()).tools.map((x) => x.name);
  t.ok(alphaTools.includes('about_a') && !alphaTools.includes('about_b'), 'alpha lists only its own tools');
  t.same((await beta.callTool({ name: 'about_b', arguments: {} })).content, [{ type: 'text', text: 'served by b' }]);
  t.equal(b.stats().toolCalls['about_b'], 1);
  t.equal(a.stats().toolCalls['about_b'], undefined, 'nothing reached the other upstream');
});

t.test('each upstream gets its own headers and cache hints', async (t) => {
  const r = await post(new URL('/beta/mcp', origin).href, modernBody('tools/list'), modernHeaders('tools/list'));
  t.equal(r.status, 200);
  t.equal(b.stats().lastHeaders['x-upstream-key'], 'key-b', 'beta’s credential went to beta');
  t.equal(r.json.result.ttlMs, 2000);
  t.equal(r.json.result.cacheScope, 'public');
  const ra = await post(new URL('/alpha/mcp', origin).href, modernBody('tools/list'), modernHeaders('tools/list'));
  t.equal(a.stats().lastHeaders['x-upstream-key'], 'key-a');
  // Kept by the gateway since the first test listed alpha: served with what is left of its ttlMs, never more.
  t.ok(
    ra.json.result.ttlMs > 0 && ra.json.result.ttlMs <= 1000,
    `alpha's ttlMs, or what is left of it (${ra.json.result.ttlMs})`,
  );
  t.equal(ra.json.result.cacheScope, 'private', 'the global default scope where the upstream sets none');
});

t.test('legacy clients are passed through per mount', async (t) => {
  const client = new LegacyClient({ name: 'legacy', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL('/alpha/mcp', origin)));
  t.teardown(() => client.close());
  t.equal(client.getServerVersion()?.name, 'causeway-legacy-fixture-a');
  t.same((await client.callTool({ name: 'about_a', arguments: {} })).content, [{ type: 'text', text: 'served by a' }]);
});

t.test('a path that is no mount is 404', async (t) => {
  const r = await post(new URL('/mcp', origin).href, modernBody('tools/list'), modernHeaders('tools/list'));
  t.equal(r.status, 404);
  t.equal(r.json.error.code, -32600);
});

t.test('the metrics carry the upstream of each answer', async (t) => {
  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  // The name label is `_other` here: about_b was called before any client listed beta's tools.
  const series =
    'causeway_modern_requests_total{upstream="beta",method="tools/call",name="_other",result_type="complete",' +
    'outcome="ok"} 1';
  t.ok(text.split('\n').includes(series), series);
  t.notMatch(
    text,
    /causeway_modern_requests_total\{upstream="alpha",method="tools\/call"/,
    'no tools/call was answered by alpha for a modern client',
  );
});

t.test('topology mistakes are reported at start-up, all at once', async (t) => {
  const bad = (settings: Record<string, unknown>) => {
    const argv = Object.entries(settings).flatMap(([k, v]) => [
      `--${k}`,
      typeof v === 'string' ? v : JSON.stringify(v),
    ]);
    try {
      loadConfig(argv, {});
      return [];
    } catch (err) {
      return (err as { problems: string[] }).problems;
    }
  };
  t.same(bad({ upstreams: { x: { url: 'http://127.0.0.1:1/mcp' }, y: { url: 'http://127.0.0.1:2/mcp' } } }), [
    'mounts: required when several upstreams are configured',
  ]);
  const problems = bad({
    upstreams: {
      x: { urls: ['http://127.0.0.1:1/mcp', 'ftp://nope'], bogus: 1 },
      'bad|name': { url: 'http://127.0.0.1:2/mcp' },
    },
    mounts: {
      '/m': { upstreams: ['x', 'nope'], routes: [{ method: 'tools/call', upstream: 'z' }] },
      healthz: { upstreams: ['x'] },
    },
  });
  t.ok(problems.includes('upstreams.x: unknown setting bogus'), 'unknown upstream setting');
  t.ok(problems.includes('upstreams.x.urls[1]: must be http(s)'), 'bad URL in a pool');
  t.ok(
    problems.some((p) => p.startsWith('upstreams.bad|name: a name is')),
    'names are restricted',
  );
  t.ok(problems.includes('mounts./m.upstreams: no upstream named nope'));
  t.ok(problems.includes('mounts./m.routes[0].upstream: must name a member of the mount'));
  t.ok(problems.includes('mounts.healthz: a mount path must start with /'));
  t.same(bad({ 'upstream.url': 'http://127.0.0.1:1/mcp' }), [], 'the one-upstream form still needs no mounts');
  t.same(
    bad({ 'upstream.url': 'http://127.0.0.1:1/mcp', upstreams: { x: { url: 'http://127.0.0.1:2/mcp' } } }),
    ['upstream.url: not used when upstreams are configured; give each upstream its url'],
    'upstream.url beside upstreams is a mistake, not silently ignored',
  );
  t.same(bad({}), ['upstream.url: required, an absolute http(s) URL']);
});

t.test('the example configurations load, once their placeholder secrets are replaced', async (t) => {
  // As deployed: the secrets from the environment, over the file's placeholders.
  const secrets = {
    CAUSEWAY_PRINCIPAL_HASH_SECRET: randomBytes(32).toString('base64'),
    CAUSEWAY_MRTR_STATE_KEYS: randomBytes(32).toString('base64'),
  };
  for (const file of ['causeway.example.json', 'routing.example.json']) {
    const path = new URL(`../../../config/${file}`, import.meta.url).pathname;
    t.doesNotThrow(() => loadConfig(['--config', path], secrets), file);
    try {
      loadConfig(['--config', path], {});
    } catch (err) {
      const { problems } = err as ConfigError;
      const placeholders = Array(problems.length).fill(/still the shipped placeholder/);
      t.match(problems, placeholders, `${file}: as shipped, only placeholders are refused`);
    }
  }
});
