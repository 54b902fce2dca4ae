// The upstream leg of a legacy client's requests, graded by the official suite's client mode:
// for each 2026-07-28 client scenario the suite starts its own server and runs
// legacy-client-driver.js with its URL, which puts Causeway in front of that server and drives it
// with the SDK 1.32.2 client. The suite grades what reached its server: the 2026 requests
// Causeway made on the legacy client's behalf (envelope, headers, requestState, Mcp-Param-*).

import t from 'tap';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { conformanceBin, nodeOptionsWithHook } from '../helpers/conformance.js';
import { exitOf, spawnOwned, type Owner } from '../helpers/processes.js';

const DRIVER = fileURLToPath(new URL('./legacy-client-driver.js', import.meta.url));
const SCENARIOS = [
  'tools_call',
  'request-metadata',
  'sep-2322-client-request-state',
  'http-standard-headers',
  'http-custom-headers',
  'http-invalid-tool-headers',
  'json-schema-ref-no-deref',
];

interface Check {
  id: string;
  status: string;
  description?: string;
  errorMessage?: string;
}

async function runScenario(owner: Owner, scenario: string): Promise<{ checks: Check[]; log: string }> {
  const out = await mkdtemp(join(tmpdir(), 'causeway-client-conformance-'));
  owner.teardown(() => rm(out, { recursive: true, force: true }));
  const child = spawnOwned(
    process.execPath,
    [
      conformanceBin(),
      'client',
      '--command',
      `${process.execPath} ${DRIVER}`,
      '--scenario',
      scenario,
      '--spec-version',
      '2026-07-28',
      '-o',
      out,
    ],
    { t: owner, env: { ...process.env, NODE_OPTIONS: nodeOptionsWithHook() }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  await exitOf(child);
  const dirs = (await readdir(out)).filter((d) => d.startsWith(`${scenario}-`));
  if (dirs.length !== 1) return { checks: [], log };
  return { checks: JSON.parse(await readFile(join(out, dirs[0]!, 'checks.json'), 'utf8')) as Check[], log };
}

// The scenarios run side by side (each its own suite process, server, Causeway and client): the
// file takes the time of the slowest, not of all seven.
const runs = new Map(SCENARIOS.map((scenario) => [scenario, runScenario(t, scenario)] as const));

let passed = 0;
for (const scenario of SCENARIOS) {
  t.test(`client scenario ${scenario}: Causeway's upstream requests for a legacy client`, async (t) => {
    const { checks, log } = await runs.get(scenario)!;
    const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    t.ok(
      checks.some((c) => c.status === 'SUCCESS'),
      `${checks.length} checks ran`,
    );
    t.same(
      bad.map((c) => `${c.id}: ${c.errorMessage ?? c.description ?? ''}`),
      [],
      'no failure or warning',
    );
    if (checks.length === 0) t.comment(log.slice(-2000));
    if (bad.length === 0 && checks.length > 0) passed++;
  });
}

t.test('all seven client scenarios pass', async (t) => {
  t.equal(passed, SCENARIOS.length, `${passed}/${SCENARIOS.length}`);
});
