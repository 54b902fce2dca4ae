// One list of deadlines that all wait the same time, with one timer: each entry told once, when it
// falls due, in the order added; an entry removed first is never told; the list goes on after
// it emptied, and an entry that left it holds no link to another.

import t from 'tap';
import { Deadlines, type Due } from '../src/deadlines.js';
import { until } from './helpers/until.js';

function due(name: string, told: string[]): Due {
  return {
    dueAt: undefined,
    dueBefore: undefined,
    dueAfter: undefined,
    deadline: () => told.push(name),
  };
}

t.test('each entry is told once when due, in order; one removed first is not', async (t) => {
  const told: string[] = [];
  const list = new Deadlines(30);
  const [a, b, c] = [due('a', told), due('b', told), due('c', told)];
  list.add(a);
  list.add(b);
  list.add(c);
  list.remove(b);
  t.same([b.dueAt, b.dueBefore, b.dueAfter], [undefined, undefined, undefined], 'b left with no links');
  await until(() => told.length === 2, { what: 'a and c told' });
  t.same(told, ['a', 'c']);
  t.equal(a.dueAt, undefined, 'a told is no longer listed');
  list.remove(a);
  t.same(told, ['a', 'c'], 'removing one told already does nothing');
});

t.test('entries added at different times each wait their own time; the list goes on once emptied', async (t) => {
  const told: string[] = [];
  const list = new Deadlines(40);
  const started = performance.now();
  list.add(due('first', told));
  await until(() => told.length === 1, { what: 'first told' });
  t.ok(performance.now() - started >= 39, 'not before its time');
  const again = performance.now();
  list.add(due('second', told));
  list.add(due('third', told));
  await until(() => told.length === 3, { what: 'second and third told' });
  t.ok(performance.now() - again >= 39, 'not before their time');
  t.same(told, ['first', 'second', 'third']);
});

t.test('an entry told may add another, which is told in its turn', async (t) => {
  const told: string[] = [];
  const list = new Deadlines(20);
  const later = due('later', told);
  list.add({ ...due('first', told), deadline: () => (told.push('first'), list.add(later)) });
  await until(() => told.length === 2, { what: 'later told' });
  t.same(told, ['first', 'later']);
});
