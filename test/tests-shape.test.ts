// The shape of the tests themselves, read from test/**/*.ts: a wait for background work goes
// through the one poll-until helper in test/helpers/ (until.ts), never a copy of it; and no fixed
// sleep is followed straight away by an assertion, since what it asserts then depends on the
// machine's speed. A sleep that shows something does NOT happen, or that waits out a timer read
// off the clock, says so on its line (`// negative check`, `// lower bound`).
// Both are heuristics on the common shapes, not a parser: they catch the copies this suite had.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sources } from './helpers/sources.js';

const TEST = fileURLToPath(new URL('../../test/', import.meta.url));
/** The one poll-until helper. */
const HELPER = join('helpers', 'until.ts');

/** A local definition under one of the names a poll-until helper goes by. */
const NAMED = new RegExp(
  String.raw`\b(?:function\s*\*?\s*|(?:const|let|var)\s+)` +
    String.raw`(?:until|eventually|waitFor|waitUntil|poll|pollUntil|retryUntil)\b\s*[=(<:]`,
);
/** A loop whose whole body is a sleep: `for (...; !done; ...) await sleep(10);`. */
const SLEEPY_LOOP = /^\s*(?:for|while)\s*\(.*\)\s*await\s+(?:sleep|delay|new Promise)\b/;
/** A deadline that ends a wait: `if (Date.now() > deadline) throw ...`. */
const DEADLINE = /Date\.now\(\)\s*>=?\s*[\w.]+\s*\)\s*\{?\s*(?:throw|return|break|reject)\b/;
/** A counted retry: `for (let i = 0; i < 40 && !done; i++) {` whose body starts with a sleep. */
const COUNTED = /^\s*for\s*\(\s*let\s+\w+\s*=\s*\d+\s*;\s*\w+\s*<\s*[\w.]+\s*&&.*\)\s*\{\s*$/;
const SLEEP = /await\s+(?:sleep|delay|settle|tick)\(|setTimeout\(\s*(?:r|res|resolve)\s*,/;
const ASSERTION =
  /\bt\.(?:equal|not|same|strictSame|ok|notOk|match|notMatch|has|type|pass|fail|rejects|resolves)\(|\bassert\w*\(/;
const SAID = /\/\/ (?:negative check|lower bound)\b/;

/** Lines (1-based, with the text) that look like a poll-until helper of their own. */
function pollHelpers(text: string): string[] {
  const lines = text.split('\n');
  const found: string[] = [];
  lines.forEach((line, i) => {
    const firstInBody = lines[i + 1] ?? '';
    if (
      NAMED.test(line) ||
      SLEEPY_LOOP.test(line) ||
      DEADLINE.test(line) ||
      (COUNTED.test(line) && SLEEP.test(firstInBody))
    ) {
      found.push(`${i + 1}: ${line.trim()}`);
    }
  });
  return found;
}

/** Lines with a fixed sleep that one of the next two non-blank lines asserts after, unless it says why. */
function sleepsThenAsserts(text: string): string[] {
  const lines = text.split('\n');
  const found: string[] = [];
  lines.forEach((line, i) => {
    if (!SLEEP.test(line) || SAID.test(line)) return;
    const next = lines
      .slice(i + 1)
      .filter((l) => l.trim() !== '')
      .slice(0, 2);
    if (next.some((l) => ASSERTION.test(l))) found.push(`${i + 1}: ${line.trim()}`);
  });
  return found;
}

// This file is left out: its samples are the very shapes it looks for.
const SELF = 'tests-shape.test.ts';
const files = sources(TEST)
  .map((file) => ({ path: relative(TEST, file), text: readFileSync(file, 'utf8') }))
  .filter((f) => f.path !== SELF);

t.test('the tests were read', async (t) => {
  t.ok(files.length > 50, `${files.length} files under test/`);
  t.ok(
    files.some((f) => f.path === HELPER && /export async function until\b/.test(f.text)),
    'test/helpers/until.ts holds the helper',
  );
});

t.test('the detectors find what they look for, and let the rest be', async (t) => {
  const copies = [
    'const until = async (cond: () => boolean) => {',
    'async function eventually(check: () => boolean, ms = 3000): Promise<boolean> {',
    'async function waitFor(what: string, check: () => boolean) {',
    '  for (let i = 0; i < 200 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 10));',
    '  while (alive(pid) && Date.now() < deadline) await sleep(20);',
    "      if (Date.now() > deadline) throw new Error('timed out');",
    '    if (lines.length >= count || Date.now() > deadline) return lines;',
    '  for (let i = 0; i < 40 && after.cancelled === before.cancelled; ' +
      'i++) {\n    await sleep(50);\n    after = await stats();\n  }',
  ];
  for (const sample of copies) t.equal(pollHelpers(sample).length, 1, `found: ${sample.split('\n')[0]}`);
  const fine = [
    "import { until } from '../helpers/until.js';",
    "  await until(() => seen.tools === 1, { what: 'tools/list_changed' });",
    '  const untilStatus = (client: Client, taskId: string) =>',
    // A loop that paces load is not a wait for a condition.
    '  for (let i = 0; i < MAX && !stop && Date.now() < hardStop; i++) {\n    await body(i);\n    await sleep(5);\n  }',
    '  while (!done) {\n    out.push(await call());\n    await sleep(2);\n  }',
  ];
  for (const sample of fine) t.same(pollHelpers(sample), [], `let be: ${sample.split('\n')[0]}`);

  t.same(
    sleepsThenAsserts("  await sleep(300);\n  t.equal(count(), 1, 'once');"),
    ['1: await sleep(300);'],
    'a sleep, then an assertion',
  );
  t.same(
    sleepsThenAsserts('  await new Promise((r) => setTimeout(r, 50));\n\n  const x = read();\n  t.same(x, []);'),
    ['1: await new Promise((r) => setTimeout(r, 50));'],
    'within two lines, blank ones skipped',
  );
  t.same(sleepsThenAsserts('  await settle();\n  t.ok(done)'), ['1: await settle();'], 'a sleep by another name');
  t.same(
    sleepsThenAsserts('  await sleep(300); // negative check: nothing follows\n  t.equal(count(), 1);'),
    [],
    'a negative check that says so',
  );
  t.same(
    sleepsThenAsserts("  await sleep(120); // lower bound: past the lock's TTL\n  t.ok(free);"),
    [],
    'a lower bound that says so',
  );
  t.same(
    sleepsThenAsserts('  await sleep(300);\n  await kill();\n  start();\n  t.ok(x);'),
    [],
    'an assertion further on is not counted',
  );
});

t.test('only test/helpers/until.ts defines a poll-until helper', async (t) => {
  const copies = files
    .filter((f) => f.path !== HELPER)
    .flatMap((f) => pollHelpers(f.text).map((l) => `${f.path}:${l}`));
  t.same(copies, [], 'use until() from test/helpers/until.ts');
});

t.test('no fixed sleep is followed straight away by an assertion', async (t) => {
  const found = files.flatMap((f) => sleepsThenAsserts(f.text).map((l) => `${f.path}:${l}`));
  t.same(
    found,
    [],
    'poll with until() for what background work produces; mark a negative check or a lower bound on its line',
  );
});
