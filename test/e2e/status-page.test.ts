// The status page on the admin port, across two Causeway replicas sharing a real Redis in front
// of the legacy fixture. The 2026 client (@modelcontextprotocol/client 2.4.0) and the legacy one
// (SDK 1.32.2) send traffic through both replicas; replica A's /status.json then shows both
// replicas, the upstream's era, both client revisions with their requests summed across the
// replicas (as each replica's own metrics count them: B's part arrives with its next beat, so
// the test polls, never sleeps), and the clients by name. Headless Chromium (Debian's, installed
// by test/setup.sh) loads /status with the admin token: the text a person reads says the same,
// no console error, no request off loopback, nothing wider than a phone's screen, and a
// screenshot is kept. The admin token is asked for (401 without it or with a wrong one), the
// probes stay open, and the data port answers /status with 404.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { chromium } from 'playwright-core';
import { LEGACY_VERSIONS } from '../../src/envelope/index.js';
import type { StatusView } from '../../src/status/index.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway, startCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const TOKEN = randomBytes(24).toString('base64url');
const bearer = { authorization: `Bearer ${TOKEN}` };
const MODERN = '2026-07-28';

const redis = await startRedis(t);
const upstream = await startLegacyServer();
t.teardown(() => upstream.close());
const settings = {
  'upstream.url': upstream.url,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
  // A beat every 300 ms: B's part reaches A's page soon after B counts a request.
  'subscriptions.takeoverMs': 900,
  'admin.token': TOKEN,
};
const [a, b] = await Promise.all([spawnCauseway(settings, { t }), spawnCauseway(settings, { t })]);
t.teardown(() => Promise.all([a.close(), b.close()]));
const replicas = [a, b];

async function status(adminUrl: string): Promise<StatusView> {
  const res = await fetch(`${adminUrl}/status.json`, { headers: bearer });
  if (res.status !== 200) throw new Error(`/status.json answered ${res.status}`);
  return (await res.json()) as StatusView;
}

/** The requests each revision made to the upstream through one replica, as its own metrics count them. */
async function counted(adminUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${adminUrl}/metrics`, { headers: bearer })).text();
  const sums = new Map<string, number>();
  for (const m of text.matchAll(/^causeway_client_revision_requests_total\{([^}]*)\} (\d+)$/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.era === 'rejected') continue;
    sums.set(labels.revision!, (sums.get(labels.revision!) ?? 0) + Number(m[2]));
  }
  return sums;
}

// ---- traffic: each client through each replica ----
let legacySessions: string[] = [];
let legacyRevision = '';
for (const [i, r] of replicas.entries()) {
  const modern = new Client(
    { name: 'status-modern', version: '2.4.0' },
    { versionNegotiation: { mode: { pin: MODERN } }, capabilities: {} },
  );
  await modern.connect(new StreamableHTTPClientTransport(new URL(r.url)));
  await modern.listTools();
  await modern.callTool({ name: 'echo', arguments: { text: `secret-argument-${i}` } });
  await modern.close();
  const legacy = new LegacyClient({ name: 'status-legacy', version: '1.32.2' });
  const transport = new LegacyTransport(new URL(r.url));
  await legacy.connect(transport);
  legacyRevision = transport.protocolVersion ?? '';
  legacySessions = [...legacySessions, transport.sessionId ?? ''];
  await legacy.callTool({ name: 'echo', arguments: { text: 'secret-argument-legacy' } });
  await legacy.close();
}

t.test("A's /status.json: both replicas, the era, the revisions summed across replicas, the clients", async (t) => {
  t.ok(LEGACY_VERSIONS.includes(legacyRevision), `the legacy client spoke ${legacyRevision}`);
  const ids = await Promise.all(
    replicas.map(async (r) => (await status(r.adminUrl!)).replicas.find((x) => x.self)!.id),
  );
  t.not(ids[0], ids[1], 'two replicas');
  const configs = (await status(a.adminUrl!)).replicas.map((x) => x.config);
  t.same(configs, [configs[0], configs[0]], 'both run the same configuration');
  t.match(configs[0], /^[\da-f]{12}$/, "named by its hash, as causeway_build_info's config label");
  const byRevision = (v: StatusView, rev: string) =>
    v.traffic.filter((r) => r.clientRevision === rev && r.upstream === 'default').reduce((n, r) => n + r.requests, 0);
  // Each replica's metrics say what it counted (a request is counted once its response has closed);
  // B publishes its part on its next beat: poll until A's page shows the sum of both.
  const { view, sums, b } = await until(
    async () => {
      const [ca, cb] = await Promise.all(replicas.map((r) => counted(r.adminUrl!)));
      const sums = new Map([MODERN, legacyRevision].map((rev) => [rev, (ca!.get(rev) ?? 0) + (cb!.get(rev) ?? 0)]));
      const v = await status(a.adminUrl!);
      const same = [...sums].every(([rev, n]) => byRevision(v, rev) === n);
      return same && { view: v, sums, b: cb! };
    },
    { what: "A's page to sum B's traffic" },
  );
  const want = (rev: string) => sums.get(rev)!;
  for (const rev of [MODERN, legacyRevision]) t.ok((b.get(rev) ?? 0) > 0, `B served ${rev} requests too`);
  t.same(view.replicas.map((r) => r.id).sort(), [...ids].sort(), 'both replicas');
  t.match(view.upstreams, [{ name: 'default', era: 'legacy', eraFound: /^(probe|store)$/, transport: String }]);
  t.match(view.upstreams[0]!.urls, [{ url: upstream.url, state: 'up' }]);
  for (const row of view.traffic) t.equal(row.upstreamEra, 'legacy', `${row.clientRevision} went to a legacy era`);
  t.ok(want(MODERN) > 2 && want(legacyRevision) > 2, `${want(MODERN)} modern, ${want(legacyRevision)} legacy`);
  t.ok(
    view.traffic.every((r) => r.lastMinute >= 0 && r.lastMinute <= r.requests),
    'the last minute is part of the whole',
  );
  const client = (name: string) => view.clients.find((c) => c.name === name);
  t.match(client('status-modern'), { version: '2.4.0', revision: MODERN, requests: want(MODERN) });
  // A legacy client names itself in initialize only: once per session, one on each replica.
  t.match(client('status-legacy'), { version: '1.32.2', revision: legacyRevision, requests: 2 });
  const text = JSON.stringify(view);
  t.notOk(text.includes(TOKEN), 'no token');
  t.notOk(text.includes('secret-argument'), 'no argument');
  for (const s of legacySessions) t.notOk(s !== '' && text.includes(s), 'no session id');
});

t.test('the client metric exports the same clients, bounded', async (t) => {
  const text = await (await fetch(`${a.adminUrl}/metrics`, { headers: bearer })).text();
  t.match(
    text,
    /^causeway_client_requests_total\{client="status-modern",version="2.4.0",revision="2026-07-28"\} \d+$/m,
  );
  t.match(text, /^causeway_client_requests_total\{client="status-legacy",version="1.32.2",revision="[\d-]+"\} 1$/m);
});

t.test('the admin token: asked of the page, the JSON and the metrics; never of the probes', async (t) => {
  for (const path of ['/status', '/status.json', '/metrics']) {
    t.equal((await fetch(`${a.adminUrl}${path}`)).status, 401, `${path} without a token`);
    const wrong = await fetch(`${a.adminUrl}${path}`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    t.equal(wrong.status, 401, `${path} with a wrong token`);
    t.equal((await fetch(`${a.adminUrl}${path}`, { headers: bearer })).status, 200, `${path} with the token`);
  }
  const basic = `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}`;
  t.equal((await fetch(`${a.adminUrl}/status`, { headers: { authorization: basic } })).status, 200, 'Basic too');
  const refused = await fetch(`${a.adminUrl}/status`);
  t.match(refused.headers.get('www-authenticate'), /Basic realm=/, 'a browser is asked for it');
  for (const path of ['/healthz', '/readyz']) t.equal((await fetch(`${a.adminUrl}${path}`)).status, 200, path);
});

t.test('the memory store: the one replica, and no token asked when admin.token is empty', async (t) => {
  const one = await startCauseway({ 'upstream.url': upstream.url });
  t.teardown(() => one.close());
  const res = await fetch(`${one.adminUrl}/status.json`);
  t.equal(res.status, 200, 'open without admin.token');
  const view = (await res.json()) as StatusView;
  t.match(view, { store: 'memory', partial: false, replicas: [{ self: true, draining: false }] });
  t.equal(view.replicas.length, 1);
  t.match(view.upstreams, [{ name: 'default', era: /^(legacy|unknown)$/ }]);
});

t.test('the data port has no status page', async (t) => {
  const origin = new URL(a.url).origin;
  for (const path of ['/status', '/status.json']) {
    const res = await fetch(`${origin}${path}`, { headers: bearer });
    await res.text();
    t.equal(res.status, 404, `${path} on the data port`);
  }
});

t.test('the page in Chromium reads right, stays on loopback, and fits a phone', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'causeway-status-'));
  // A fresh profile of its own (Playwright takes it as userDataDir, not as --user-data-dir).
  const context = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    extraHTTPHeaders: bearer,
    viewport: { width: 1100, height: 900 },
  });
  // The profile goes with the browser; the screenshots stay.
  t.teardown(async () => {
    await context.close();
    rmSync(join(dir, 'profile'), { recursive: true, force: true });
  });
  const requests: string[] = [];
  const errors: string[] = [];
  context.on('request', (r) => requests.push(r.url()));
  const page = await context.newPage();
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  const ids = (await status(a.adminUrl!)).replicas.map((r) => r.id);
  const loaded = await page.goto(`${a.adminUrl}/status`);
  t.equal(loaded?.status(), 200);
  const text = (await page.locator('body').allInnerTexts()).join('\n');
  for (const id of ids) t.ok(text.includes(id), `replica ${id} shown`);
  t.match(text, /legacy/, 'the era');
  t.ok(text.includes(MODERN), `revision ${MODERN}`);
  t.ok(text.includes(legacyRevision), `revision ${legacyRevision}`);
  t.match(text, /status-modern/);
  t.match(text, /status-legacy/);
  t.notOk(text.includes(TOKEN), 'no token on the page');
  // It refreshes itself, with the browser's credentials: the <main> it fetched replaces this one.
  // (Expressions as text: the tests are compiled without the DOM's types.)
  await page.evaluate("document.querySelector('main').setAttribute('data-seen', '')");
  await until(() => page.evaluate<boolean>("document.querySelector('main[data-seen]') === null"), {
    what: 'the page to refresh itself',
    timeoutMs: 15_000,
  });
  t.equal(await page.locator('#state').textContent(), 'live', 'the refresh was let in');
  const shot = join(dir, 'status.png');
  await page.screenshot({ path: shot, fullPage: true });
  t.comment(`screenshot: ${shot}`);
  await page.setViewportSize({ width: 390, height: 844 });
  const wide = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
  t.ok(wide <= 0, `nothing wider than a phone's screen (${wide} px over)`);
  await page.screenshot({ path: join(dir, 'status-phone.png'), fullPage: true });
  t.same(errors, [], 'no console error');
  const off = requests.filter((u) => !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+\//.test(u));
  t.same(off, [], 'no request off loopback');
});
