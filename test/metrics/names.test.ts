// The `name` label's vocabulary: only names the upstream listed, templates matched as RFC 6570,
// bounded in count and length, and never slow on a hostile URI.

import t from 'tap';
import { compileTemplate, KnownNames, NO_NAME, OTHER_NAME } from '../../src/metrics/index.js';

t.test('tools and prompts count by name only once listed', async (t) => {
  const names = new KnownNames();
  t.equal(names.label('tools/call', 'echo'), OTHER_NAME);
  names.learn('tools/list', { tools: [{ name: 'echo' }, { name: 'x'.repeat(129) }, { nope: 1 }] });
  names.learn('prompts/list', { prompts: [{ name: 'greet' }] });
  t.equal(names.label('tools/call', 'echo'), 'echo');
  t.equal(names.label('tools/call', 'x'.repeat(129)), OTHER_NAME, 'over-long names are not learned');
  t.equal(names.label('prompts/get', 'greet'), 'greet');
  t.equal(names.label('prompts/get', 'echo'), OTHER_NAME, 'a tool name is not a prompt name');
  t.equal(names.label('tools/list', undefined), NO_NAME);
  t.equal(names.label('completion/complete', 'anything'), NO_NAME);
});

t.test('at most 500 names per kind are learned', async (t) => {
  const names = new KnownNames();
  names.learn('tools/list', { tools: Array.from({ length: 600 }, (_, i) => ({ name: `t${i}` })) });
  t.equal(names.label('tools/call', 't499'), 't499');
  t.equal(names.label('tools/call', 't500'), OTHER_NAME);
});

t.test('resources/read counts by the most specific matching template', async (t) => {
  const names = new KnownNames();
  names.learn('resources/templates/list', {
    resourceTemplates: [
      { uriTemplate: 'file:///{+path}' },
      { uriTemplate: 'file:///logs/{day}.log' },
      { uriTemplate: 'db://{table}/rows{?limit,offset}' },
      { uriTemplate: 'broken://{x' },
    ],
  });
  t.equal(names.label('resources/read', 'file:///logs/2026-01-01.log'), 'file:///logs/{day}.log');
  t.equal(names.label('resources/read', 'file:///etc/hosts'), 'file:///{+path}');
  t.equal(names.label('resources/read', 'db://users/rows?limit=5'), 'db://{table}/rows{?limit,offset}');
  t.equal(names.label('resources/read', 'db://users/rows'), 'db://{table}/rows{?limit,offset}');
  t.equal(names.label('resources/read', 'db://users/x/rows'), OTHER_NAME, 'a simple expression stops at /');
  t.equal(names.label('resources/read', 'broken://x'), OTHER_NAME);
  t.equal(compileTemplate('broken://{x'), undefined);
  t.equal(compileTemplate('a{}b'), undefined);
});

t.test('adjacent expressions do not backtrack without bound', async (t) => {
  const names = new KnownNames();
  names.learn('resources/templates/list', { resourceTemplates: [{ uriTemplate: 'x://{a}{b}{c}{d}{e}{f}!' }] });
  // Six like expressions in a row compile to the pattern of one, which cannot backtrack against
  // itself; were they kept apart, the matches below would take longer than the test may run.
  t.equal(
    compileTemplate('x://{a}{b}{c}{d}{e}{f}!')?.pattern.source,
    compileTemplate('x://{a}!')?.pattern.source,
    'merged into one',
  );
  const started = performance.now();
  t.equal(names.label('resources/read', 'x://' + 'a'.repeat(1000)), OTHER_NAME);
  t.equal(names.label('resources/read', 'x://' + 'a'.repeat(5000) + '!'), OTHER_NAME, 'over-long URIs are not matched');
  t.comment(`matched in ${(performance.now() - started).toFixed(1)} ms`);
});
