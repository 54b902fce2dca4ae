// Reloading without a restart: the built bin with a --config file, in front of the legacy fixture
// (SDK 1.32.2), under continuous calls from the 2026 client (2.4.0) and the legacy SDK client. A
// SIGHUP with a new tool filter, then one with a new upstream and mount (and a setting that needs
// a restart), then one with an invalid file, then a new file swapped in as a ConfigMap volume
// updates, with no signal: every call of the traffic succeeds, each change is seen by the next
// request once the replica logs it applied (that line's ms says how long after the signal: the
// 1 s it must stay under is read there, not timed here), and the invalid file changes nothing
// and is logged.

import t from 'tap';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway } from '../helpers/causeway.js';
import { connectLegacy, connectModern } from '../helpers/clients.js';
import { until } from '../helpers/until.js';

const a = await startLegacyServer({ label: 'a' });
const b = await startLegacyServer({ label: 'b' });
t.teardown(async () => {
  await a.close();
  await b.close();
});
const dir = mkdtempSync(join(tmpdir(), 'causeway-reload-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
// As the kubelet lays out a ConfigMap volume: causeway.json -> ..data/causeway.json, ..data -> a
// folder of the version; an update writes a new folder and swaps ..data by a rename. Causeway
// watches the folder the file is in: a change inside the version's folder is heard by SIGHUP
// only, and the swap of ..data (the ConfigMap's update) by the watch.
const volume = join(dir, 'config');
mkdirSync(volume);
const file = join(volume, 'causeway.json');
let version = 0;
/** A new version's folder holding the settings, written whole. */
const versionOf = (settings: object | string): string => {
  const folder = join(volume, `..v${++version}`);
  mkdirSync(folder);
  writeFileSync(join(folder, 'causeway.json'), typeof settings === 'string' ? settings : JSON.stringify(settings));
  return folder;
};
/** Edited in place in the version's folder, by a rename from outside the volume: the watch sees nothing. */
const write = (settings: object) => {
  const staged = join(dir, `staged-${++version}.json`);
  writeFileSync(staged, JSON.stringify(settings));
  renameSync(staged, join(volume, '..data', 'causeway.json'));
};
/** The kubelet's update: ..data swapped for a new version's folder. */
const swapLink = (settings: object) => {
  symlinkSync(basename(versionOf(settings)), join(volume, '..data_tmp'));
  renameSync(join(volume, '..data_tmp'), join(volume, '..data'));
};
const upstreams = { a: { url: a.url } };
symlinkSync(basename(versionOf({ upstreams, mounts: { '/mcp': { upstreams: ['a'] } } })), join(volume, '..data'));
symlinkSync(join('..data', 'causeway.json'), file);

const causeway = await spawnCauseway({ config: file }, { t });
t.teardown(() => causeway.close());
const origin = new URL(causeway.url).origin;

type Line = { msg?: string; reason?: string; ms?: number; problems?: string[]; settings?: string[]; config?: string };
const lines = () => causeway.logs.map((l) => JSON.parse(l) as Line);
const reloaded = () => lines().filter((l) => l.msg === 'configuration reloaded');
const refused = () => lines().filter((l) => l.msg?.startsWith('configuration not reloaded'));

const modern = await connectModern(t, new URL('/mcp', origin), 'reload-modern');
const legacy = await connectLegacy(t, new URL('/mcp', origin), 'reload-legacy');
const toolNames = async () => (await modern.listTools()).tools.map((x) => x.name);
const legacyToolNames = async () => (await legacy.listTools()).tools.map((x) => x.name);

// The traffic: each client calls a tool no change hides, one call after the other, until told to stop.
const failures: string[] = [];
const calls = { modern: 0, legacy: 0 };
let stop = false;
const traffic = (era: 'modern' | 'legacy') =>
  (async () => {
    const client = era === 'modern' ? modern : legacy;
    while (!stop) {
      try {
        const r = await client.callTool({ name: 'test_simple_text', arguments: {} });
        if (r.isError) failures.push(`${era}: ${JSON.stringify(r.content)}`);
        calls[era]++;
      } catch (err) {
        failures.push(`${era}: ${(err as Error).message}`);
      }
    }
  })();
// Three callers of each era: some call is in flight at every swap.
const running = [1, 2, 3].flatMap(() => [traffic('modern'), traffic('legacy')]);
await until(() => calls.modern > 0 && calls.legacy > 0, { what: 'both clients calling' });

/** SIGHUP, then the reload's own log line; the change is then seen by the next request. */
async function hup(what: string, done: () => Line[]): Promise<Line> {
  const before = done().length;
  causeway.child.kill('SIGHUP');
  return (await until(() => done()[before], { what }))!;
}

t.test('a new tool filter on SIGHUP, seen by both eras', async (t) => {
  t.ok((await toolNames()).includes('test_image_content'), 'listed before');
  write({ upstreams, mounts: { '/mcp': { upstreams: ['a'], tools: { deny: ['test_*image*'] } } } });
  const line = await hup('the filter applied', reloaded);
  t.equal(line.reason, 'SIGHUP');
  // How long it took is the replica's to say (its log line's ms), not this test's to time.
  t.comment(`applied ${line.ms} ms after the signal`);
  t.notOk((await toolNames()).includes('test_image_content'), 'the 2026 client no longer sees it');
  t.notOk((await legacyToolNames()).includes('test_image_content'), 'nor the legacy client');
  t.ok((await toolNames()).includes('test_simple_text'));
});

t.test('a new upstream and mount, and a setting that needs a restart: named, not applied', async (t) => {
  write({
    upstreams: { ...upstreams, b: { url: b.url } },
    mounts: { '/mcp': { upstreams: ['a'], tools: { deny: ['test_*image*'] } }, '/b': { upstreams: ['b'] } },
    store: { idleTtlMs: 60_000 },
  });
  const line = await hup('the new upstream applied', reloaded);
  t.comment(`applied ${line.ms} ms after the signal`);
  t.match(line, { added: ['b'], changed: [], removed: [], mounts: ['/mcp', '/b'] });
  const restart = lines().find((l) => l.msg?.startsWith('not applied, a restart is needed'));
  t.same(restart?.settings, ['store.idleTtlMs']);
  const onB = await connectModern(t, new URL('/b', origin), 'reload-b');
  t.match(await onB.callTool({ name: 'about_b', arguments: {} }), { content: [{ text: 'served by b' }] });
  const legacyB = await connectLegacy(t, new URL('/b', origin), 'reload-b-legacy');
  t.match(await legacyB.callTool({ name: 'about_b', arguments: {} }), { content: [{ text: 'served by b' }] });
});

t.test('an invalid file: every problem logged, nothing changed', async (t) => {
  const applied = reloaded().length;
  write({ upstreams, mounts: { '/mcp': { upstreams: ['a', 'nowhere'] } }, limits: { noSuchLimit: 1 } });
  const line = await hup('the invalid file refused', refused);
  t.equal(line.problems?.length, 2, 'both problems');
  t.match(line.problems!.join('\n'), /noSuchLimit/);
  t.match(line.problems!.join('\n'), /nowhere/);
  t.equal(reloaded().length, applied, 'nothing applied');
  t.notOk((await toolNames()).includes('test_image_content'), 'the filter stays');
  const onB = await connectModern(t, new URL('/b', origin), 'reload-b-again');
  t.match(await onB.callTool({ name: 'about_b', arguments: {} }), { content: [{ text: 'served by b' }] });
});

t.test('a change of the file with no signal is picked up', async (t) => {
  const applied = reloaded().length;
  swapLink({
    upstreams: { ...upstreams, b: { url: b.url } },
    mounts: {
      '/mcp': { upstreams: ['a'], tools: { deny: ['test_*image*'], describe: { test_simple_text: 'Reloaded.' } } },
      '/b': { upstreams: ['b'] },
    },
  });
  const line = await until(() => reloaded()[applied], { what: 'the new symlink applied' });
  t.equal(line.reason, 'file changed');
  const tools = (await modern.listTools()).tools;
  t.equal(tools.find((x) => x.name === 'test_simple_text')?.description, 'Reloaded.');
});

t.test('an upstream changed, then removed: its pooled sessions end, its mount is gone', async (t) => {
  const onB = await connectModern(t, new URL('/b', origin), 'reload-b-change');
  t.match(await onB.callTool({ name: 'about_b', arguments: {} }), { content: [{ text: 'served by b' }] });
  const mcp = { upstreams: ['a'], tools: { deny: ['test_*image*'], describe: { test_simple_text: 'Reloaded.' } } };
  const deleted = b.stats().sessionsDeleted;
  write({
    upstreams: { ...upstreams, b: { url: b.url, requestTimeoutMs: 20_000 } },
    mounts: { '/mcp': mcp, '/b': { upstreams: ['b'] } },
  });
  t.match(await hup('b changed', reloaded), { added: [], changed: ['b'], removed: [] });
  t.match(
    await onB.callTool({ name: 'about_b', arguments: {} }),
    { content: [{ text: 'served by b' }] },
    'served by the new one',
  );
  await until(() => b.stats().sessionsDeleted > deleted, { what: "the replaced upstream's pooled session ended" });
  write({ upstreams, mounts: { '/mcp': mcp } });
  t.match(await hup('b removed', reloaded), { added: [], changed: [], removed: ['b'], mounts: ['/mcp'] });
  await t.rejects(onB.callTool({ name: 'about_b', arguments: {} }), 'its mount is not found');
  await until(() => b.stats().sessionsDeleted > deleted + 1, { what: "the removed upstream's pooled session ended" });
});

t.test('the traffic of both eras lost nothing; the reloads are counted', async (t) => {
  stop = true;
  await Promise.all(running);
  t.same(failures, [], 'no call failed');
  t.ok(calls.modern > 0 && calls.legacy > 0, `${calls.modern} modern and ${calls.legacy} legacy calls`);
  const metrics = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  t.match(metrics, /causeway_config_reloads_total\{result="applied"\} 5\n/);
  t.match(metrics, /causeway_config_reloads_total\{result="invalid"\} 1\n/);
  const hash = reloaded().at(-1)!.config!;
  t.match(metrics, new RegExp(`causeway_build_info\\{[^}]*config="${hash}"\\} 1\\n`), 'the running config named');
  t.equal(metrics.match(/causeway_build_info\{/g)?.length, 1, 'one series: the old hash removed');
});
