// The built bin refuses a bad configuration with every problem at once and exit code 2: what
// flags, env and the config file give, the cross-checks, and what the Redis store would refuse
// when it is made, so that one start-up shows everything to fix.

import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitOf, spawnOwned } from '../helpers/processes.js';

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

t.test('every problem of every source is reported together, with exit code 2', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'causeway-start-up-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'causeway.json');
  const settings = { 'upstream.url': 'http://127.0.0.1:1/mcp', 'upstream.retries': 3, listen: { path: 'mcp' } };
  writeFileSync(file, JSON.stringify(settings));
  const placeholder = 'REPLACE-with-32-random-characters';
  const child = spawnOwned(
    process.execPath,
    [
      MAIN,
      '--config',
      file,
      '--upstream.taskSupport',
      'flase',
      '--upstream.headers',
      'authorization: Bearer x',
      '--store.kind',
      'redis',
      '--store.redisUrl',
      'http://127.0.0.1:6379',
      // A folder: readable, but the store could not read a CA from it.
      '--store.redisTlsCaFile',
      dir,
    ],
    {
      t,
      env: { PATH: process.env.PATH, CAUSEWAY_LISTEN_PORT: '99999', CAUSEWAY_PRINCIPAL_HASH_SECRET: placeholder },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const { code } = await exitOf(child);
  t.equal(code, 2, 'a configuration error, not a crash');
  const expected = [
    'upstream.taskSupport: expected true or false (or 1 or 0), not "flase" (from --upstream.taskSupport)',
    'upstream.headers: entry "authorization: …" has no "=": expected name=value (from --upstream.headers)',
    'listen.port: expected an integer from 0 to 65535, not 99999',
    `${file}: unknown setting upstream.retries`,
    'listen.path: must start with /',
    'store.redisUrl: must be redis:// or rediss://',
    `store.redisTlsCaFile: cannot read ${dir}`,
    'mrtr.stateKeys: required with store.kind redis',
    'principal.hashSecret: still the shipped placeholder',
  ];
  t.match(stderr, /^invalid configuration:\n/);
  for (const problem of expected) t.ok(stderr.includes(problem), problem);
  t.notOk(stderr.includes(placeholder), 'the secret is not echoed');
  t.notOk(stderr.includes('Bearer x'), 'nor the map entry that may hold one');
});
