// InFlight and InFlightByKey (src/in-flight.ts): what a long-lived owner has in flight, without a
// Set or a Map.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { InFlight, InFlightByKey, type InFlightEntry } from '../src/in-flight.js';

t.test('add, delete, size, first and values', async (t) => {
  const list = new InFlight<string>();
  t.equal(list.size, 0);
  t.equal(list.first(), undefined);
  t.same(list.values(), []);
  const a = list.add('a');
  const b = list.add('b');
  const c = list.add('c');
  t.equal(list.size, 3);
  t.equal(list.first(), 'c', 'the newest first');
  t.same(list.values(), ['c', 'b', 'a']);
  t.ok(list.delete(b), 'from the middle');
  t.same(list.values(), ['c', 'a']);
  t.equal(b.value, undefined, 'a removed entry forgets its value');
  t.notOk(list.delete(b), 'twice: false, and nothing else moves');
  t.equal(list.size, 2);
  t.ok(list.delete(c), 'the head');
  t.equal(list.first(), 'a');
  t.ok(list.delete(a), 'the last one');
  t.equal(list.size, 0);
  t.same(list.values(), []);
  const d = list.add('d');
  t.same(list.values(), ['d'], 'usable again once empty');
  t.equal(d.value, 'd');
});

t.test("another list's entry is not removed", async (t) => {
  const one = new InFlight<number>();
  const other = new InFlight<number>();
  const e = one.add(1);
  other.add(2);
  t.notOk(other.delete(e));
  t.equal(other.size, 1);
  t.equal(one.size, 1);
  t.equal(e.value, 1);
});

t.test('values() is a copy: each value may remove itself while the owner walks them', async (t) => {
  interface Item {
    entry?: InFlightEntry<Item>;
  }
  const list = new InFlight<Item>();
  const items = [{}, {}, {}].map((item: Item) => {
    item.entry = list.add(item);
    return item;
  });
  let walked = 0;
  for (const item of list.values()) {
    walked += 1;
    list.delete(item.entry!);
  }
  t.equal(walked, 3);
  t.equal(list.size, 0);
  t.equal(items.length, 3);
});

t.test('by key: set, get, has, delete, size, and values oldest first', async (t) => {
  const calls = new InFlightByKey<number>();
  t.equal(calls.size, 0);
  calls.set('number:3', 3);
  calls.set('string:a', 1);
  calls.set('number:1', 2);
  t.same(calls.values(), [3, 1, 2], 'in the order set, numeric ids included (prefixed)');
  calls.set('string:a', 10);
  t.equal(calls.size, 3, 'setting a key again replaces its value');
  t.same(calls.values(), [3, 10, 2]);
  t.ok(calls.has('number:1'));
  t.equal(calls.get('number:3'), 3);
  t.ok(calls.delete('number:3'));
  t.notOk(calls.delete('number:3'), 'twice: false');
  t.notOk(calls.has('number:3'));
  t.equal(calls.get('number:3'), undefined);
  t.equal(calls.size, 2);
  t.equal(calls.get('constructor'), undefined, 'no prototype behind the keys');
  t.notOk(calls.has('__proto__'));
  calls.set('__proto__', 7);
  t.equal(calls.get('__proto__'), 7, 'any string is a key');
  t.same(calls.values(), [10, 2, 7]);
});

// Why the module exists: a long-lived Set whose values come and go keeps them alive through
// scavenges, and they are promoted; an InFlight entry holds nothing once removed, and
// InFlightByKey's dictionary keeps far less than a Map would. Measured in a
// child process with --expose-gc: the container made old by two full collections, then 20,000
// values of about 1 KB added and removed (64 held at a time) with minor collections between,
// and the growth of the old space read after. Nothing here depends on time.
const CHILD = `
import v8 from 'node:v8';
const { InFlight, InFlightByKey } = await import(process.argv[1]);
const old = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_used_size;
const out = {};
for (const kind of ['inflight', 'bykey', 'set']) {
  const holder = { c: kind === 'set' ? new Set() : kind === 'bykey' ? new InFlightByKey() : new InFlight() };
  gc();
  gc();
  const before = old();
  const held = [];
  for (let n = 0; n < 20000; n++) {
    const v = { payload: new Array(128).fill(n) };
    if (kind === 'bykey') {
      holder.c.set('n:' + n, v);
      held.push('n:' + n);
    } else held.push(kind === 'set' ? (holder.c.add(v), v) : holder.c.add(v));
    if (held.length > 64) holder.c.delete(held.shift());
    if (n % 500 === 0) gc({ type: 'minor' });
  }
  gc({ type: 'minor' });
  out[kind] = old() - before;
  holder.c = undefined;
  held.length = 0;
}
console.log(JSON.stringify(out));
`;

t.test('removed values are not promoted, as a Set’s are', async (t) => {
  const module = fileURLToPath(new URL('../src/in-flight.js', import.meta.url));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', '--input-type=module', '-e', CHILD, module],
    { timeout: 120_000 },
  );
  const grew = JSON.parse(stdout) as { set: number; inflight: number; bykey: number };
  const mb = (n: number) => (n / 1e6).toFixed(2);
  t.comment(
    `old space grew ${mb(grew.set)} MB with a Set, ${mb(grew.inflight)} MB ` +
      `with InFlight, ${mb(grew.bykey)} MB with InFlightByKey (22 MB allocated)`,
  );
  t.ok(
    grew.set > 5e6,
    'the Set: removed values were kept through scavenges and promoted (what the test guards against is real)',
  );
  t.ok(grew.inflight < 1e6, 'InFlight: removed values died young');
  // A dictionary rebuilt as keys come and go leaves its old table holding what it held until the
  // next full collection, but not chained to the next one: about 1 MB here, a twentieth of the Set's.
  t.ok(grew.bykey < Math.min(3e6, grew.set / 5), 'InFlightByKey: a small part of what the Set kept');
});
