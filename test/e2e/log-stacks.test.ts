// Stack traces only at debug (src/log.ts errorSerializer): an ordinary upstream error (one that
// cannot be reached) is logged with its message and no stack at info, and with its stack at
// debug; the bin losing its Redis, then shut down as usual, writes no stack trace either.

import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { spawnCauseway, startCauseway } from '../helpers/causeway.js';
import { stopProcess } from '../helpers/processes.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { modernBody, modernHeaders, post, toolCall } from './wire.js';

type Line = { level: number; msg: string; err?: { message?: string; stack?: string } };
const parsed = (logs: string[]): Line[] => logs.map((l) => JSON.parse(l) as Line);

/** The lines with an `err`, after one modern request to an upstream nobody listens on. */
async function unreachable(t: Test, level: string): Promise<Line[]> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const causeway = await startCauseway({ 'upstream.url': url, 'upstream.era': 'legacy', 'log.level': level });
  try {
    const res = await post(causeway.url, modernBody('tools/list'), modernHeaders('tools/list'));
    t.equal(res.status, 502, 'the client gets 502');
  } finally {
    await causeway.close();
  }
  return parsed(causeway.logs).filter((l) => typeof l.err === 'object' && l.err !== null);
}

t.test('an unreachable upstream at info: the error without its stack', async (t) => {
  const lines = await unreachable(t, 'info');
  t.ok(lines.length > 0, 'the failure is logged with its error');
  for (const l of lines) {
    t.ok(l.level >= 30, `"${l.msg}" at info or above`);
    t.type(l.err!.message, 'string', 'with its message');
    t.notOk('stack' in l.err!, `"${l.msg}" carries no stack`);
  }
});

t.test('the same at debug: the stack is there', async (t) => {
  const lines = await unreachable(t, 'debug');
  t.ok(
    lines.some((l) => typeof l.err?.stack === 'string' && l.err.stack.includes('\n    at ')),
    'a line carries the stack',
  );
});

t.test('Redis lost, then a normal shutdown: no stack trace', async (t) => {
  const redis = await startRedis(t);
  const key = randomBytes(32).toString('base64');
  const settings = { 'store.kind': 'redis', 'store.redisUrl': redis.url, 'mrtr.stateKeys': key };
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const causeway = await spawnCauseway({ 'upstream.url': upstream.url, ...settings }, { t });
  // A pooled session recorded in Redis, for the drain to release.
  const call = toolCall('echo', { text: 'hi' });
  t.equal((await post(causeway.url, call.body, call.headers)).status, 200, 'a call served');
  await redis.kill();
  // The replica finds Redis gone (its liveness beat fails) and says so before it is stopped.
  await until(() => causeway.logs.some((l) => l.includes('"err":')), { what: 'a line about the lost Redis' });
  const exit = await stopProcess(causeway.child, { graceMs: 30_000 });
  t.equal(exit.code, 0, 'a normal exit');
  t.ok(
    causeway.logs.some((l) => l.includes('"msg":"draining"')),
    'it drained',
  );
  const stacks = causeway.logs.filter((l) => l.includes('"stack"') || l.includes('\\n    at '));
  t.same(stacks, [], 'no line carries a stack');
});
