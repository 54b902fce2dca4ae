// A stdio server that refuses initialize (a real child process, test/upstream/refusing-stdio-server)
// is counted as a failed start and backs off as a crashing one does: many principals' requests
// start a handful of processes, not one each, and every answer says why (the child's refusal).

import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCauseway } from '../helpers/causeway.js';
import { modernBody, modernHeaders, post, type WireResponse } from './wire.js';

const REFUSING = fileURLToPath(new URL('../upstream/refusing-stdio-server.js', import.meta.url));
const REFUSAL = 'MCP_LICENSE_KEY is not set';

t.test('a child refusing initialize: bounded processes, each answer naming the refusal', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'causeway-refusal-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ledger = join(dir, 'pids');
  const causeway = await startCauseway({
    'upstream.transport': 'stdio',
    'upstream.command': process.execPath,
    'upstream.args': `${REFUSING},${ledger}`,
    'upstream.name': 'licensed',
    'upstream.maxProcesses': 50,
    'principal.mode': 'header',
    'principal.hashSecret': 'stdio-refusal-test-secret-0123456789',
  });
  t.teardown(() => causeway.close());
  const list = (who: string): Promise<WireResponse> =>
    post(causeway.url, modernBody('tools/list'), { ...modernHeaders('tools/list'), 'x-causeway-principal': who });

  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => list(`user-${i}`)));
  for (let i = 10; i < 20; i++) answers.push(await list(`user-${i}`));
  const elapsedMs = Date.now() - started;
  const processes = readFileSync(ledger, 'utf8').trim().split('\n').length;

  // One start at a time while none succeeded, and none within the backoff after a failed one
  // (100 ms doubling): one per window that ended while the requests ran, and the first.
  const windows = Math.ceil(Math.log2(elapsedMs / 100 + 1));
  t.ok(processes <= windows + 2, `${processes} processes for 20 requests in ${elapsedMs} ms (at most ${windows + 2})`);
  t.ok(processes < 20, 'not one per request');
  for (const a of answers) {
    t.ok(a.status === 502 || a.status === 503, `a failure: ${a.status}`);
    t.match(a.json?.error?.message, REFUSAL, 'names the child’s refusal');
  }
  const fast = answers.filter((a) => a.status === 503);
  t.ok(fast.length >= 10, `${fast.length} refused at once while backing off`);
  for (const a of fast) t.match(a.headers['retry-after'], /^\d+$/, 'with Retry-After');
  t.match(answers.find((a) => a.status === 502)?.json?.error?.message, /Upstream "licensed" refused initialize/);
});
