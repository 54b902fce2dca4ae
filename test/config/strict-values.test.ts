// Values that are not what their setting takes are refused by name, never read as something
// else: booleans, numbers, ports and map entries from env and flags, placeholder secrets, and
// dotted keys in a config file. A Redis store needs the multi-round keys every replica shares.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { configProblems } from '../helpers/config.js';
import type { Config } from '../../src/config/schema.js';

const URL_FLAG = ['--upstream.url', 'http://127.0.0.1:1/mcp'];

const problems = configProblems;

/** A config file in a folder removed when the test ends. */
function configFile(t: Test, body: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'causeway-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'causeway.json');
  writeFileSync(file, JSON.stringify(body));
  return file;
}

const key = () => randomBytes(32).toString('base64');

/** Problems of the one-upstream config with these flags (and env). */
const withFlags = (flags: string[], env: NodeJS.ProcessEnv = {}) => problems([...URL_FLAG, ...flags], env);

t.test('booleans: true or false (1 or 0) from flags and env; anything else is refused by name and value', async (t) => {
  t.same(withFlags(['--upstream.taskSupport', 'flase']), [
    'upstream.taskSupport: expected true or false (or 1 or 0), not "flase" (from --upstream.taskSupport)',
  ]);
  t.same(withFlags([], { CAUSEWAY_AUTH_PUBLIC_DISCOVER: 'yes' }), [
    'auth.publicDiscover: expected true or false (or 1 or 0), not "yes" (from CAUSEWAY_AUTH_PUBLIC_DISCOVER)',
  ]);
  t.equal(loadConfig([...URL_FLAG, '--upstream.taskSupport', 'false'], {}).upstream.taskSupport, false);
  t.equal(loadConfig([...URL_FLAG, '--upstream.taskSupport', '0'], {}).upstream.taskSupport, false);
  t.equal(loadConfig(URL_FLAG, { CAUSEWAY_UPSTREAM_TASK_SUPPORT: 'TRUE' }).upstream.taskSupport, true);
});

t.test('numbers: text that is no number, and fractions where a whole number is meant, are refused', async (t) => {
  t.same(withFlags(['--limits.maxInFlight', 'lots']), [
    'limits.maxInFlight: expected a number, not "lots" (from --limits.maxInFlight)',
  ]);
  t.same(withFlags(['--limits.maxInFlight', 'NaN']), [
    'limits.maxInFlight: expected a number, not "NaN" (from --limits.maxInFlight)',
  ]);
  t.same(withFlags([], { CAUSEWAY_DRAIN_DELAY_MS: ' ' }), [
    'drain.delayMs: expected a number, not " " (from CAUSEWAY_DRAIN_DELAY_MS)',
  ]);
  t.same(withFlags(['--limits.maxInFlight', '2.5']), ['limits.maxInFlight: expected an integer >= 0, not 2.5']);
  t.same(withFlags(['--store.idleTtlMs', '-1']), ['store.idleTtlMs: expected an integer >= 0, not -1']);
  t.same(withFlags(['--log.accessSample', '1.5']), ['log.accessSample: expected a number from 0 to 1, not 1.5']);
  const fractions = ['--limits.ratePerSecond', '0.5', '--log.accessSample', '0.01', '--drain.delayMs', '1e3'];
  const cfg = loadConfig([...URL_FLAG, ...fractions], {});
  const read = { limits: { ratePerSecond: 0.5 }, log: { accessSample: 0.01 }, drain: { delayMs: 1000 } };
  t.match(cfg, read, 'a rate and a share take fractions');
});

t.test('ports: whole numbers 0 to 65535 (admin.port also -1), the Redis nodes 1 to 65535', async (t) => {
  t.same(withFlags(['--listen.port', '99999']), ['listen.port: expected an integer from 0 to 65535, not 99999']);
  t.same(withFlags(['--admin.port', '-2']), ['admin.port: expected an integer from -1 to 65535, not -2']);
  t.same(withFlags(['--listen.port', '80.5']), ['listen.port: expected an integer from 0 to 65535, not 80.5']);
  const redis = ['--store.kind', 'redis', '--mrtr.stateKeys', key()];
  t.same(withFlags([...redis, '--store.redisSentinels', 'a:26379,b:99999,c:0']), [
    'store.redisSentinels: a port is 1 to 65535, not 99999, 0',
  ]);
  t.same(withFlags(['--listen.port', '0', '--admin.port', '-1']), []);
});

t.test('map entries: one without "=" or with an empty name is refused, a secret one not echoed', async (t) => {
  t.same(withFlags(['--upstream.headers', 'authorization: Bearer s3cret-token']), [
    'upstream.headers: entry "authorization: …" has no "=": expected name=value (from --upstream.headers)',
  ]);
  t.same(withFlags(['--upstream.headers', 'x-a=1,=2']), [
    'upstream.headers: entry 2 (not shown: it may hold a secret) has an empty name: expected name=value ' +
      '(from --upstream.headers)',
  ]);
  t.same(withFlags([], { CAUSEWAY_UPSTREAM_ENV: 'TOKEN' }), [
    'upstream.env: entry 1 (not shown: it may hold a secret) has no "=": expected name=value ' +
      '(from CAUSEWAY_UPSTREAM_ENV)',
  ]);
  t.same(
    withFlags(['--auth.moreIssuers', 'https://as.example']).filter((p) => p.includes('moreIssuers')),
    ['auth.moreIssuers: entry "https://as.example" has no "=": expected name=value (from --auth.moreIssuers)'],
    'what is no secret is shown',
  );
  const file = configFile(t, { upstream: { url: 'http://127.0.0.1:1/mcp', headers: { '': 'x' } } });
  t.same(problems(['--config', file]), ['upstream.headers: a name is empty']);
  const cfg = loadConfig([...URL_FLAG, '--upstream.headers', 'x-a=1, x-b = two=2 ,'], {});
  t.same(cfg.upstream.headers, { 'x-a': '1', 'x-b': 'two=2' }, 'a trailing comma is no entry; a value may hold =');
});

t.test('a placeholder secret is refused by name, with how to make a real one, never echoed', async (t) => {
  const shipped = {
    hash: 'REPLACE-with-32-random-characters',
    key: 'REPLACEwithBase64of32randomBytesXXXXXXXXXXX=',
    redis: 'REPLACE-with-a-long-random-password',
    example: 'replace-with-32-random-characters',
  };
  const found = withFlags(
    [
      '--principal.mode',
      'bearer',
      '--store.kind',
      'redis',
      '--mrtr.stateKeys',
      `${key()},${shipped.key}`,
      '--store.redisUrl',
      `redis://:${shipped.redis}@127.0.0.1:6379`,
      '--store.redisSentinelPassword',
      shipped.redis,
      '--upstream.headers',
      `authorization=Bearer ${shipped.redis}`,
    ],
    { CAUSEWAY_PRINCIPAL_HASH_SECRET: shipped.hash, CAUSEWAY_STORE_REDIS_PASSWORD: shipped.redis },
  );
  const make = 'make a real one with `openssl rand -base64 32` (every replica needs the same)';
  const refused = (where: string, how = make) =>
    `${where}: still the shipped placeholder (REPLACE…), not a secret; ${how}`;
  const given = 'set the real credential its issuer gave';
  t.same(found, [
    refused('principal.hashSecret'),
    refused('upstream.headers.authorization', given),
    refused('store.redisUrl (its password)'),
    refused('store.redisPassword'),
    refused('store.redisSentinelPassword'),
    refused('mrtr.stateKeys[1]'),
  ]);
  for (const value of Object.values(shipped)) t.notOk(found.join('\n').includes(value), 'the value is never shown');
  const upstreams = { crm: { url: 'http://127.0.0.1:1/mcp', headers: { 'x-api-key': shipped.redis }, env: {} } };
  const named = ['--upstreams', JSON.stringify(upstreams), '--mounts', '{"/mcp":{"upstreams":["crm"]}}'];
  t.same(problems([...named, '--principal.hashSecret', shipped.example]), [
    refused('principal.hashSecret'),
    refused('upstreams.crm.headers.x-api-key', given),
  ]);
  const real = ['--principal.mode', 'bearer', '--principal.hashSecret', 'x'.repeat(32)];
  real.push('--upstream.headers', 'x-mode=replace');
  t.same(withFlags(real), [], 'real values pass');
});

t.test('a dotted key in a config file is the setting it names; given twice, or unknown, it is refused', async (t) => {
  const dotted = configFile(t, { 'upstream.url': 'http://127.0.0.1:1/mcp', 'listen.port': 0, log: { level: 'warn' } });
  const cfg: Config = loadConfig(['--config', dotted], {});
  t.equal(cfg.upstream.url, 'http://127.0.0.1:1/mcp');
  t.equal(cfg.listen.port, 0);
  t.equal(cfg.log.level, 'warn');
  const both = configFile(t, {
    'upstream.url': 'http://127.0.0.1:1/mcp',
    upstream: { url: 'http://127.0.0.1:2/mcp' },
    'upstream.nope': 1,
    'log.level': 'loud',
  });
  t.same(problems(['--config', both]), [
    `${both}: upstream.url is given twice, as "upstream.url" and nested in "upstream"`,
    `${both}: unknown setting upstream.nope`,
    'log.level: expected one of fatal, error, warn, info, debug, trace, silent',
  ]);
});

t.test('the Redis store needs mrtr.stateKeys: every replica opens what another sealed', async (t) => {
  t.same(withFlags(['--store.kind', 'redis']), [
    'mrtr.stateKeys: required with store.kind redis: every replica must open the requestState the others sealed, ' +
      'or a multi-round retry that lands on another replica fails; make a key with `openssl rand -base64 32` ' +
      'and give every replica the same list',
  ]);
  t.same(withFlags(['--store.kind', 'redis', '--mrtr.stateKeys', key()]), []);
  t.same(withFlags([]), [], 'the memory store: one replica, its own random key');
});
