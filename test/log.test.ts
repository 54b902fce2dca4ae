// requestLogger: a request's lines carry its bindings whether the child was made at once (debug)
// or on its first line (above debug), and nothing below the level is written.

import t from 'tap';
import { createLogger, requestLogger } from '../src/log.js';

function sink(level: string) {
  const raw: string[] = [];
  const root = createLogger(level, { write: (s: string) => void raw.push(s) });
  return { root, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

t.test('above debug: debug lines are dropped, others carry the bindings of every level', async (t) => {
  const { root, lines } = sink('info');
  const log = requestLogger(root, { reqId: 'r-1' });
  log.debug({ x: 1 }, 'not written');
  const child = log.child({ method: 'tools/call' });
  child.trace('not written either');
  t.same(lines(), []);
  log.warn({ reason: 'overloaded' }, 'request failed');
  child.error({ code: 7 }, 'upstream failed');
  t.match(lines(), [
    { level: 40, reqId: 'r-1', reason: 'overloaded', msg: 'request failed' },
    { level: 50, reqId: 'r-1', method: 'tools/call', code: 7, msg: 'upstream failed' },
  ]);
  t.notOk('method' in lines()[0]!, "a child's bindings stay on the child");
  t.equal(log.level, 'info');
  t.ok(log.isLevelEnabled('warn'));
});

t.test('at debug the child is a pino child at once, and debug lines carry the bindings', async (t) => {
  const { root, lines } = sink('debug');
  const log = requestLogger(root, { reqId: 'r-2' }).child({ method: 'tools/list' });
  log.debug('upstream request');
  t.match(lines(), [{ level: 20, reqId: 'r-2', method: 'tools/list', msg: 'upstream request' }]);
});
