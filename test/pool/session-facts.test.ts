// A new session's tool facts fall back on the upstream's scout session's (pool/session-facts.ts):
// for the tools the scout listed, and only once it listed them all; its own reading of its tools
// wins over the scout's, and a change the scout hears leaves new sessions to read their own.

import t from 'tap';
import { SessionFacts, type ToolFacts } from '../../src/pool/session-facts.js';

const header = [{ name: 'Region', param: 'region' }] as unknown as NonNullable<ToolFacts['headers']>;
const listed: ToolFacts[] = [
  { name: 'plain', headers: undefined, support: 'forbidden' },
  { name: 'annotated', headers: header, support: 'forbidden' },
  { name: 'long', headers: undefined, support: 'required' },
];

t.test('a session knows what the scout listed, once it listed every page', async (t) => {
  const scout = SessionFacts.forScout();
  const session = new SessionFacts(() => scout);
  scout.learnTools(listed);
  t.notOk(session.knows('plain'), 'nothing before the scout read every page');
  t.equal(session.taskSupport('long'), undefined);
  scout.toolsComplete = true;
  t.ok(session.knows('plain'));
  t.equal(session.taskSupport('plain'), 'forbidden');
  t.equal(session.taskSupport('long'), 'required');
  t.same(session.toolHeaders('annotated'), header);
  t.equal(session.toolHeaders('plain'), undefined);
  t.notOk(session.knows('mine_only'), "a tool the scout did not list is the session's to read");
  t.equal(session.taskSupport('mine_only'), undefined);
});

t.test("the session's own reading wins, and a change the scout heard leaves new sessions to read", async (t) => {
  const scout = SessionFacts.forScout();
  scout.learnTools(listed);
  scout.toolsComplete = true;
  const own = new SessionFacts(() => scout);
  own.learnTools([{ name: 'long', headers: undefined, support: 'optional' }]);
  own.toolsComplete = true;
  t.equal(own.taskSupport('long'), 'optional', 'its own list says optional');
  t.equal(own.taskSupport('plain'), 'forbidden', 'not in its own complete list');
  t.equal(
    own.toolHeaders('annotated'),
    undefined,
    "the scout's annotations do not leak into a session that read its own",
  );

  const fresh = new SessionFacts(() => scout);
  scout.invalidate('notifications/tools/list_changed');
  t.notOk(fresh.knows('plain'), 'stale facts are not lent');
  t.equal(fresh.taskSupport('long'), undefined);
});

t.test('the scout lends nothing to itself, and a session without one knows only its own', async (t) => {
  const alone = new SessionFacts(() => undefined);
  t.notOk(alone.knows('plain'));
  alone.learnTools(listed);
  alone.toolsComplete = true;
  t.ok(alone.knows('anything'), 'its own complete list says all there is');
  t.equal(alone.taskSupport('anything'), 'forbidden');
});

t.test("whether some tool runs as a task: the scout's answer until the session read its own", async (t) => {
  const scout = SessionFacts.forScout();
  const session = new SessionFacts(() => scout);
  scout.learnTools(listed);
  t.notOk(session.knowsAll, 'not before the scout read every page');
  t.notOk(session.hasTaskTools);
  scout.toolsComplete = true;
  t.ok(session.knowsAll);
  t.ok(session.hasTaskTools, "the scout listed 'long', required");
  session.learnTools([{ name: 'plain', headers: undefined, support: 'forbidden' }]);
  session.toolsComplete = true;
  t.notOk(session.hasTaskTools, 'its own complete list has none');
  const fresh = new SessionFacts(() => scout);
  scout.invalidate('notifications/tools/list_changed');
  t.notOk(fresh.knowsAll, 'stale facts are not lent');
  t.notOk(fresh.hasTaskTools);
});
