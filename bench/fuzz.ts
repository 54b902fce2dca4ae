// `npm run fuzz`: the request fuzzer of test/ingress/fuzz.test.ts at length. 100,000 mutated
// requests of both eras (test/ingress/fuzz-cases.ts), 8 at a time, at a Causeway process in front
// of the legacy fixture process, started the way the bench starts them (bench/services.ts), each
// answer judged by test/ingress/fuzz-check.ts. Prints a summary and exits non-zero on any
// violation, a failed health probe, an error-level log line with a stack, or a Causeway exit.
//
//   FUZZ_CASES=<n>         cases (default 100000)
//   FUZZ_SEED=<n>          the seed (default: a random one, printed)
//   FUZZ_CONCURRENCY=<n>   requests in flight (default 8)
//   FUZZ_REPLAY=<s>:<i>,…  only these cases
// Logs and every failing case, in full: the directory printed at the start.

import { randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import {
  caseOfReqId,
  describeFailure,
  errorLogsWithoutStack,
  errorLogsWithStack,
  groupFailures,
  logsByRequest,
  openLegacySession,
  runFuzz,
  statusLine,
  summaryLines,
} from '../test/ingress/fuzz-check.js';
import { describeCase } from '../test/ingress/fuzz-cases.js';
import { freePort, peakRssMb, rssMb, startProcess, tail, waitFor, type Service } from './procs.js';
import { DIST, startCauseway, type Proxy } from './services.js';

const SDK_FIXTURE = join(DIST, 'test/fixtures/legacy-server.js');
const CASES = Number(process.env.FUZZ_CASES ?? 100_000);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) >>> 0 : randomInt(0x1_0000_0000);
const CONCURRENCY = Number(process.env.FUZZ_CONCURRENCY ?? 8);
const REPLAY = process.env.FUZZ_REPLAY?.split(',').map((s) => {
  const [seed, index] = s.split(':').map(Number);
  return { seed: seed! >>> 0, index: index! };
});
const TIMEOUT_MS = 30_000;

const out = (line = '') => process.stdout.write(`${line}\n`);

async function startFixture(logDir: string): Promise<{ url: string; svc: Service }> {
  const port = await freePort();
  const svc = startProcess(process.execPath, [SDK_FIXTURE, '--port', String(port)], join(logDir, 'upstream.log'));
  const origin = `http://127.0.0.1:${port}`;
  await waitFor('legacy fixture', svc, async () => {
    const res = await fetch(`${origin}/__stats`);
    await res.arrayBuffer();
    return res.status === 200;
  });
  return { url: `${origin}/mcp`, svc };
}

async function main(): Promise<number> {
  const logDir = mkdtempSync(join(os.tmpdir(), 'causeway-fuzz-'));
  out(
    `causeway fuzz: ${REPLAY ? `${REPLAY.length} replayed case(s)` : `${CASES} cases, seed ${SEED}`} ` +
      `(FUZZ_SEED=${SEED} to run it again); logs in ${logDir}`,
  );
  let fixture: { url: string; svc: Service } | undefined;
  let causeway: Proxy | undefined;
  let exited: string | undefined;
  try {
    fixture = await startFixture(logDir);
    causeway = await startCauseway(
      'causeway',
      fixture.url,
      {
        // Cases whose body never ends are answered 408 this soon (the default is 10 s).
        'limits.bodyTimeoutMs': 2_000,
        // Held multi-round calls (a tool that asks) are let go sooner than the default 5 min.
        'mrtr.stateTtlMs': 20_000,
      },
      logDir,
    );
    const cw = causeway;
    cw.svc.child.once('exit', (code, signal) => (exited = `Causeway exited (${code ?? signal}) during the run`));
    const port = Number(new URL(cw.origin).port);
    const target = { url: cw.url, port };
    const sessionId = await openLegacySession(target);
    if (sessionId === undefined)
      out('warning: no legacy session through Causeway; in-session cases become garbage-session cases');
    const ctx = sessionId === undefined ? { port } : { port, sessionId };
    const started = Date.now();
    let lastPrint = 0;
    const summary = await runFuzz({
      target,
      healthUrls: [`${cw.origin}/healthz`, ...(cw.adminOrigin !== cw.origin ? [`${cw.adminOrigin}/healthz`] : [])],
      plan: [{ seed: SEED, cases: CASES }],
      ...(REPLAY ? { only: REPLAY } : {}),
      concurrency: CONCURRENCY,
      timeoutMs: TIMEOUT_MS,
      ctx,
      healthEvery: 1000,
      onProgress: (done, total) => {
        if (done - lastPrint < 5000 && done !== total) return;
        lastPrint = done;
        out(
          `  ${done}/${total} in ${((Date.now() - started) / 1000).toFixed(0)} ` +
            `s; Causeway RSS ${rssMb(cw.svc.pid).toFixed(0)} MB`,
        );
      },
    });
    const rss = { now: rssMb(cw.svc.pid), peak: peakRssMb(cw.svc.pid) };

    out();
    for (const line of summaryLines(summary)) out(line);
    out(`Causeway RSS ${rss.now.toFixed(0)} MB (peak ${rss.peak.toFixed(0)} MB)`);

    const logLines = readFileSync(cw.svc.logFile, 'utf8').split('\n').filter(Boolean);
    const logs = logsByRequest(logLines);
    const stacks = errorLogsWithStack(logLines);
    const plain = errorLogsWithoutStack(logLines);
    const groups = groupFailures(summary.failures, 1);
    const failuresFile = join(logDir, 'failures.txt');
    writeFileSync(failuresFile, summary.failures.map((f) => `${describeFailure(f, undefined, logs)}\n`).join('\n'));

    const problems: string[] = [];
    if (groups.length > 0) {
      out();
      out(
        `VIOLATIONS: ${summary.failures.length} case(s); by rule and ` +
          `family (one example each; all of them in ${failuresFile}):`,
      );
      for (const g of groups) {
        out();
        out(`## ${g.rule} — ${g.count} ${g.family} case(s)`);
        out(describeFailure(g.examples[0]!, g.rule, logs));
      }
      problems.push(`${summary.failures.length} case(s) with violations`);
    }
    if (summary.health.length > 0) {
      out();
      out('HEALTH PROBES FAILED:');
      for (const h of summary.health.slice(0, 10)) out(`  after ${h.afterCases} cases, ${h.url}: ${h.problem}`);
      problems.push(`${summary.health.length} failed health probe(s)`);
    }
    if (stacks.length > 0) {
      out();
      out(`ERROR-LEVEL LOG LINES WITH A STACK: ${stacks.length} (first 3)`);
      for (const s of stacks.slice(0, 3)) {
        out(s.line.slice(0, 1500));
        const c = caseOfReqId(s.reqId, ctx);
        if (c) out(describeCase(c, 300));
      }
      problems.push(`${stacks.length} error-level log line(s) with a stack`);
    }
    if (plain > 0) out(`(${plain} log line(s) at level >= 50 without a stack)`);
    if (summary.aborted) problems.push(summary.aborted);
    if (exited) problems.push(exited);
    out();
    if (problems.length === 0) {
      out(`OK: ${summary.sent} cases, no violations (statuses ${statusLine(summary.statuses)})`);
      return 0;
    }
    out(`FAILED (seed ${SEED}): ${problems.join('; ')}`);
    return 1;
  } catch (err) {
    out(`fuzz run failed: ${(err as Error).stack ?? String(err)}`);
    if (causeway) out(tail(causeway.svc.logFile));
    return 1;
  } finally {
    await causeway?.stop();
    await fixture?.svc.stop('SIGTERM', 3000);
  }
}

process.exitCode = await main();
