// A bounded request fuzzer: 3,000 mutated requests of both eras (test/ingress/fuzz-cases.ts),
// 8 at a time, at a Causeway in front of the legacy fixture; every answer is judged by
// test/ingress/fuzz-check.ts (no hang, no 500, a valid JSON-RPC answer or a defined HTTP error,
// the id echoed, or absent when unreadable). Half the cases come from a fixed seed, half from a seed drawn per run;
// both are printed, and each failure names its seed, case and a replay command.
//
//   FUZZ_SEED=<n>          the second seed instead of a random one
//   FUZZ_CASES=<n>         cases per seed (default 1500)
//   FUZZ_REPLAY=<s>:<i>,…  only these cases
//   FUZZ_DUMP=<file>       every failing case, in full, to this file
//
// `npm run fuzz` (bench/fuzz.ts) runs 100,000 of the same cases against a Causeway process.

import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { firstText, modernHeaders, post, send, toolCall } from '../e2e/wire.js';
import { describeCase } from './fuzz-cases.js';
import {
  caseOfReqId,
  describeFailure,
  errorLogsWithoutStack,
  errorLogsWithStack,
  groupFailures,
  logsByRequest,
  openLegacySession,
  runFuzz,
  summaryLines,
} from './fuzz-check.js';

const FIXED_SEED = 20_260_728;
const RANDOM_SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) >>> 0 : randomInt(0x1_0000_0000);
const CASES = Number(process.env.FUZZ_CASES ?? 1500);
const REPLAY = process.env.FUZZ_REPLAY?.split(',').map((s) => {
  const [seed, index] = s.split(':').map(Number);
  return { seed: seed! >>> 0, index: index! };
});
const TIMEOUT_MS = 30_000;

t.comment(`seeds: fixed ${FIXED_SEED}, random ${RANDOM_SEED} (run again with FUZZ_SEED=${RANDOM_SEED})`);

const upstream = await startLegacyServer({ askTimeoutMs: 5_000 });
let causeway: RunningCauseway | undefined;
t.teardown(async () => {
  await causeway?.close();
  await upstream.close();
});
causeway = await startCauseway({
  'upstream.url': upstream.url,
  // Cases whose body never ends are answered 408 this soon (the default is 10 s).
  'limits.bodyTimeoutMs': 2_000,
  'log.level': 'info',
});
const cw = causeway;
const target = { url: cw.url, port: cw.port };
const healthUrls = [`http://127.0.0.1:${cw.port}/healthz`, ...(cw.adminUrl ? [`${cw.adminUrl}/healthz`] : [])];

t.test('causeway-survives-mutated-requests-of-both-eras', async (t) => {
  const sessionId = await openLegacySession(target);
  t.ok(sessionId, 'a legacy session through Causeway for the in-session cases');
  const ctx = sessionId === undefined ? { port: cw.port } : { port: cw.port, sessionId };
  const summary = await runFuzz({
    target,
    healthUrls,
    plan: [
      { seed: FIXED_SEED, cases: CASES },
      { seed: RANDOM_SEED, cases: CASES },
    ],
    ...(REPLAY ? { only: REPLAY } : {}),
    concurrency: 8,
    timeoutMs: TIMEOUT_MS,
    ctx,
  });
  for (const line of summaryLines(summary)) t.comment(line);

  const logs = logsByRequest(cw.logs);
  const seeds = `seeds ${FIXED_SEED} (fixed) and ${RANDOM_SEED}`;
  for (const g of groupFailures(summary.failures)) {
    t.fail(
      `${g.rule} in ${g.count} ${g.family} case(s); ` +
        `first:\n${g.examples.map((f) => describeFailure(f, g.rule, logs)).join('\n---\n')}`,
    );
  }
  t.equal(summary.failures.length, 0, `no violations in ${summary.sent} cases (${seeds})`);
  if (process.env.FUZZ_DUMP) {
    writeFileSync(
      process.env.FUZZ_DUMP,
      summary.failures.map((f) => `${describeFailure(f, undefined, logs)}\n`).join('\n'),
    );
    t.comment(`failures written to ${process.env.FUZZ_DUMP}`);
  }
  t.notOk(summary.aborted, summary.aborted ?? 'every case was sent');
  t.same(summary.health, [], 'the probes answered 200 between cases and at the end');

  const stacks = errorLogsWithStack(cw.logs);
  for (const s of stacks.slice(0, 5)) {
    const c = caseOfReqId(s.reqId, ctx);
    t.fail(
      `an error-level log line with a stack for a client's ` +
        `fault:\n${s.line.slice(0, 1500)}${c ? `\n${describeCase(c)}` : ''}`,
    );
  }
  t.equal(stacks.length, 0, `no log line at level >= 50 with a stack (${cw.logs.length} lines)`);
  const plain = errorLogsWithoutStack(cw.logs);
  if (plain > 0) t.comment(`${plain} log line(s) at level >= 50 without a stack`);

  // Still serving: both eras.
  const health = await send(healthUrls[0]!, { method: 'GET' });
  t.equal(health.status, 200, '/healthz after the run');
  const after = await post(
    cw.url,
    toolCall('echo', { text: 'after the fuzz' }, 'after').body,
    modernHeaders('tools/call', 'echo'),
  );
  t.equal(after.status, 200, 'a modern tools/call after the run');
  t.equal(firstText(after), 'after the fuzz');
});
