// TargetSet: round-robin over admitted URLs, ejection after consecutive failures, re-admission
// on probation, and a last resort when every URL is ejected. Time is the test's own clock.

import t from 'tap';
import { neverDelivered, TargetSet } from '../../src/upstream/core/targets.js';
import { compileRules, globToRegExp, pinnedUpstream } from '../../src/routing/rules.js';
import { templatePattern } from '../../src/routing/merge.js';

const URLS = ['http://a/mcp', 'http://b/mcp', 'http://c/mcp'];

function set(ejectAfterFailures = 2, ejectMs = 1000) {
  let now = 0;
  const events: string[] = [];
  const targets = new TargetSet(
    URLS,
    { ejectAfterFailures, ejectMs },
    {
      onEject: (_u, i) => events.push(`eject ${i}`),
      onReadmit: (_u, i) => events.push(`readmit ${i}`),
    },
    () => now,
  );
  return { targets, events, advance: (ms: number) => (now += ms) };
}

t.test('new sessions go round-robin', async (t) => {
  const { targets } = set();
  t.same(
    [1, 2, 3, 4, 5, 6].map(() => targets.pick()),
    [...URLS, ...URLS],
  );
});

t.test('consecutive failures eject; success resets the count', async (t) => {
  const { targets, events, advance } = set(2, 1000);
  targets.failed(URLS[1]!);
  targets.succeeded(URLS[1]!);
  targets.failed(URLS[1]!);
  t.ok(targets.admits(URLS[1]), 'one failure after a success is not two in a row');
  targets.failed(URLS[1]!);
  t.notOk(targets.admits(URLS[1]), 'two in a row eject');
  t.same(events, ['eject 1']);
  t.same(
    [1, 2, 3, 4].map(() => targets.pick()),
    [URLS[0], URLS[2], URLS[0], URLS[2]],
    'new sessions skip it',
  );
  advance(999);
  t.notOk(targets.admits(URLS[1]));
  advance(1);
  t.ok(targets.admits(URLS[1]), 're-admitted after ejectMs');
  t.same(events, ['eject 1', 'readmit 1']);
  targets.failed(URLS[1]!);
  t.notOk(targets.admits(URLS[1]), 'on probation: one failure ejects again');
});

t.test('all ejected: the one back soonest is still tried, excluded ones last', async (t) => {
  const { targets, advance } = set(1, 1000);
  targets.failed(URLS[0]!);
  advance(10);
  targets.failed(URLS[1]!);
  advance(10);
  targets.failed(URLS[2]!);
  t.equal(targets.pick(), URLS[0], 'the first ejected is back first');
  t.equal(targets.pick(new Set([URLS[0]!])), URLS[1], 'unless it was tried already');
  t.notOk(targets.admits('http://elsewhere/mcp'), 'a URL not in the list is never admitted');
});

t.test('only failures that prove nothing was sent count as never delivered', async (t) => {
  const coded = (code: string) => Object.assign(new Error(code), { code });
  t.ok(neverDelivered(coded('ECONNREFUSED')));
  t.ok(neverDelivered(coded('UND_ERR_CONNECT_TIMEOUT')));
  t.ok(neverDelivered(new Error('wrapped', { cause: coded('ECONNREFUSED') })));
  t.notOk(neverDelivered(coded('UND_ERR_SOCKET')), 'a socket closed mid-request may have been delivered');
  t.notOk(neverDelivered(coded('ECONNRESET')));
  t.notOk(neverDelivered(new Error('plain')));
});

t.test('route rules: first match wins, `*` is the only wildcard', async (t) => {
  const rules = compileRules([
    { method: 'tools/call', name: 'admin_*', upstream: 'ops' },
    { name: 'file:///etc/*', upstream: 'files' },
    { method: 'completion/complete', upstream: 'prompts' },
  ]);
  t.equal(pinnedUpstream(rules, 'tools/call', 'admin_reset'), 'ops');
  t.equal(pinnedUpstream(rules, 'prompts/get', 'admin_reset'), undefined, 'the method must match too');
  t.equal(pinnedUpstream(rules, 'resources/read', 'file:///etc/hosts'), 'files', 'a rule without a method matches any');
  t.equal(pinnedUpstream(rules, 'completion/complete', undefined), 'prompts');
  t.equal(pinnedUpstream(rules, 'tools/call', undefined), undefined, 'a name rule needs a name');
  t.notOk(globToRegExp('a.b').test('aXb'), 'dots are literal');
  t.ok(globToRegExp('a*').test('a\nb'));
});

t.test('template patterns find the owner of a URI', async (t) => {
  t.ok(templatePattern('test://template/{id}/data').test('test://template/42/data'));
  t.notOk(
    templatePattern('test://template/{id}/data').test('test://template/4/2/data'),
    'a simple variable stops at /',
  );
  t.ok(templatePattern('file:///{+path}').test('file:///a/b/c'));
  t.ok(templatePattern('search://q{?term,limit}').test('search://q?term=x&limit=2'));
  t.ok(templatePattern('search://q{?term,limit}').test('search://q'));
});

t.test('an answer re-admits at once; a lone URL is never ejected', async (t) => {
  const { targets, events } = set(1, 60_000);
  targets.failed(URLS[2]!);
  t.notOk(targets.admits(URLS[2]));
  targets.succeeded(URLS[2]!);
  t.ok(targets.admits(URLS[2]), 'it answered, so it is up');
  t.same(events, ['eject 2', 'readmit 2']);
  const lone = new TargetSet(['http://only/mcp'], { ejectAfterFailures: 1, ejectMs: 60_000 });
  lone.failed('http://only/mcp');
  lone.failed('http://only/mcp');
  t.ok(lone.admits('http://only/mcp'));
});
