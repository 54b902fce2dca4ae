// The drain's close order is data (App.shutdownOrder, from src/parts/registry.ts), not code. This
// reads it for a replica with every part that closes (a shared store, a stdio upstream reached
// from other replicas over the relay bus, the gateway cache, a skills folder), checks the
// constraints the order exists for, and drains a real replica with Redis to see it close its
// parts in exactly that order. A replica with a memory store closes fewer parts, in the same order.
// The registry itself runs the steps in the order it is given, whatever the order they were
// registered in.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { Writable } from 'node:stream';
import { createLogger } from '../src/log.js';
import { ORDER, Parts } from '../src/parts/index.js';
import { startLegacyServer } from './fixtures/legacy-server.js';
import { startCauseway } from './helpers/causeway.js';
import { startRedis } from './helpers/redis.js';
import { firstText, post, toolCall } from './e2e/wire.js';
import { stateKey } from './mrtr/wire.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/legacy-server.js', import.meta.url));

/** The close steps the drain logged, in the order it ran them. */
function closedParts(logs: readonly string[]): string[] {
  return logs
    .map((l) => JSON.parse(l) as { msg?: string; part?: string })
    .filter((l) => l.msg === 'part closed')
    .map((l) => l.part!);
}

t.test('a replica with Redis closes every part in the order it shows', async (t) => {
  const redis = await startRedis(t);
  const base = await mkdtemp(join(tmpdir(), 'causeway-parts-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  await mkdir(join(base, 'notes'));
  await writeFile(
    join(base, 'notes', 'SKILL.md'),
    '---\nname: notes\ndescription: Take notes\n---\nWrite them down.\n',
  );
  const causeway = await startCauseway({
    'upstream.transport': 'stdio',
    'upstream.command': process.execPath,
    'upstream.args': `${FIXTURE},--stdio`,
    'upstream.name': 'fixture',
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': stateKey(),
    'cache.maxBytes': 1_000_000,
    mounts: JSON.stringify({ '/mcp': { upstreams: ['fixture'], skills: base } }),
  });
  let drained = false;
  t.teardown(() => (drained ? undefined : causeway.close()));

  const order = causeway.app.shutdownOrder;
  t.same(order, ORDER.close, 'with this config every close step has a part to close');
  const before = (a: string, b: string, why: string) =>
    t.ok(order.includes(a) && order.includes(b) && order.indexOf(a) < order.indexOf(b), `${a} before ${b}: ${why}`);
  before('replica-asks', 'cross-replica', 'asks handed to the last calls arrive over the cross-replica bus');
  before('rounds', 'cross-replica', "legacy clients' answers arrive over the cross-replica bus");
  before('pool', 'store', 'the pool ends its sessions in the store');
  before('pool', 'upstreams', 'the pool ends its sessions through the upstream clients');
  before('upstreams', 'relay-bus', 'the relays of stdio sessions use the relay bus until their clients close');

  // A call first, so the pool, the relay and the child process each have something to let go of.
  const call = toolCall('echo', { text: 'before the drain' }, 'first');
  t.equal(firstText(await post(causeway.url, call.body, call.headers)), 'before the drain');
  drained = true;
  await causeway.close();
  t.same(closedParts(causeway.logs), order, 'the drain closed the parts in exactly that order');
});

t.test('a replica with a memory store closes fewer parts, in the same order', async (t) => {
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const causeway = await startCauseway({ 'upstream.url': upstream.url });
  // The reloads' watch and the skills folders close whatever the config: a reload may add a folder.
  const order = ['config-watch', 'rounds', 'cache', 'pool', 'store', 'upstreams', 'skills'];
  t.same(causeway.app.shutdownOrder, order, 'no bridge to other replicas');
  await causeway.close();
  t.same(closedParts(causeway.logs), order);
});

t.test('the registry runs steps in the order given, not the order registered', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString('utf8'));
      cb();
    },
  });
  const order = {
    start: [{ name: 'a' }, { name: 'slow', waitMs: 20, slow: 'slow is not up yet' }, { name: 'b' }, { name: 'c' }],
    endStreams: ['x', 'y'],
    letGo: ['p', 'q'],
    close: ['one', 'two', 'three'],
  } as const;
  const parts = new Parts(order, createLogger('debug', sink));
  const ran: string[] = [];
  const step = (name: string) => async () => void ran.push(name);
  parts.onClose('three', step('close three'));
  parts.onClose('one', step('close one'));
  parts.onClose('one', step('close one again'));
  parts.onLetGo('q', () => void ran.push('let go q'));
  parts.onLetGo('p', () => void ran.push('let go p'));
  parts.onEndStreams('y', step('end y'));
  parts.onEndStreams('x', async (ms) => void ran.push(`end x within ${ms}`));
  parts.onStart('b', step('start b'), step('undo b'));
  parts.onStart('slow', () => new Promise(() => undefined));
  parts.onStart('a', step('start a'), step('undo a'));
  parts.onStart('c', () => Promise.reject(new Error('c cannot start')));

  t.same(parts.shutdownOrder, ['one', 'three'], 'only the close steps some part registered');
  await t.rejects(parts.start(), /c cannot start/);
  t.ok(
    lines.some((l) => l.includes('slow is not up yet')),
    'a step past its wait is named, and start-up goes on',
  );
  await parts.endStreams(5);
  parts.letGo();
  for (const release of parts.releases()) await release();
  t.same(ran, [
    'start a',
    'start b',
    'undo b',
    'undo a',
    'end x within 5',
    'end y',
    'let go p',
    'let go q',
    'close one',
    'close one again',
    'close three',
  ]);
});
