// Every configuration mistake is found by the loader and reported together at start-up, the
// Redis, requestState-key and header-policy settings included (not one at a time, later, by the
// stage that first uses them).

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config/load.js';
import { configProblems } from '../helpers/config.js';
import { resolveTopology } from '../../src/config/topology.js';

const problems = (argv: string[]) => configProblems(['--upstream.url', 'http://127.0.0.1:1/mcp', ...argv]);

t.test('Redis, stateKeys, credential headers and the principal secret: all reported at once', async (t) => {
  const found = problems([
    '--store.kind',
    'redis',
    '--store.redisUrl',
    'http://redis:6379/x',
    '--store.redisSentinels',
    'a:1,not a host',
    '--store.redisCluster',
    'c:3',
    '--store.keyPrefix',
    'cw{1}:',
    '--store.redisTlsCaFile',
    '/nonexistent/ca.pem',
    '--mrtr.stateKeys',
    `${randomBytes(32).toString('base64')},${randomBytes(16).toString('base64')}`,
    '--security.credentialHeaders',
    'x-ok,x bad',
    '--principal.mode',
    'bearer',
  ]);
  t.same(
    found.sort(),
    [
      'mrtr.stateKeys: every key must be 32 bytes, base64 (1 is not)',
      'principal.hashSecret: required (16+ characters) when principal.mode is not none',
      'security.credentialHeaders: not header names: x bad',
      'store.keyPrefix: must not contain { or }',
      'store.redisSentinels and store.redisCluster exclude each other',
      'store.redisSentinels: not host:port: not a host',
      'store.redisTlsCaFile: cannot read /nonexistent/ca.pem',
      'store.redisUrl: must be redis:// or rediss://',
      'store.redisUrl: the path must be a database number',
    ].sort(),
  );
});

t.test('good Redis settings pass; Redis settings are not checked for the memory store', async (t) => {
  const keys = ['--mrtr.stateKeys', randomBytes(32).toString('base64')];
  const sentinels = ['--store.redisSentinels', 'a:26379,[::1]:26380'];
  const url = ['--store.redisUrl', 'rediss://u:p@[::1]:6380/2'];
  t.same(problems([...keys, '--store.kind', 'redis', ...url, ...sentinels]), []);
  t.same(problems([...keys, '--store.kind', 'redis', '--store.redisCluster', 'a:7000,b:7001']), []);
  const cluster = ['--store.redisCluster', 'a:7000', '--store.redisUrl', 'redis://x/1'];
  t.same(problems([...keys, '--store.kind', 'redis', ...cluster]), [
    'store.redisUrl: Redis Cluster has only database 0',
  ]);
  t.same(problems(['--store.redisUrl', 'not a url']), [], 'the memory store does not use it');
});

/** Problems of a config given only by argv (no upstream.url put in front). */
const problemsOf = (argv: string[]) => configProblems(argv);

t.test('stdio upstreams: a command instead of a URL, per entry too; auto takes one URL', async (t) => {
  t.same(
    problemsOf(['--upstream.transport', 'stdio', '--upstream.command', 'node', '--upstream.args', 'server.js,--stdio']),
    [],
  );
  const cfg = loadConfig(
    [
      '--upstream.transport',
      'stdio',
      '--upstream.command',
      'node',
      '--upstream.args',
      'server.js,--stdio',
      '--upstream.env',
      'A=1',
    ],
    {},
  );
  const { topology } = resolveTopology(cfg);
  t.match(topology.upstreams[0], {
    transport: 'stdio',
    command: 'node',
    args: ['server.js', '--stdio'],
    env: { A: '1' },
    urls: [],
    maxProcesses: 100,
  });
  t.same(problemsOf(['--upstream.transport', 'stdio']), ['upstream.command: required when transport is stdio']);
  t.same(
    problemsOf([
      '--upstream.transport',
      'stdio',
      '--upstream.command',
      'x',
      '--upstream.url',
      'http://127.0.0.1:1/mcp',
    ]),
    ['upstream: url and urls are not used when transport is stdio'],
  );
  t.same(problemsOf(['--upstream.transport', 'carrier-pigeon', '--upstream.url', 'http://127.0.0.1:1/mcp']), [
    'upstream.transport: expected one of streamable-http, sse, stdio, auto',
  ]);
  t.same(problemsOf(['--upstream.transport', 'auto', '--upstream.url', 'http://127.0.0.1:1/mcp']), []);
  t.same(problemsOf(['--upstream.transport', 'auto']), ['upstream.url: required, an absolute http(s) URL']);
  t.same(
    problemsOf([
      '--upstreams',
      JSON.stringify({ a: { transport: 'auto', urls: ['http://127.0.0.1:1/mcp', 'http://127.0.0.1:2/mcp'] } }),
    ]),
    ['upstreams.a.urls: transport auto takes one URL; give several to streamable-http'],
  );
  const upstreams = JSON.stringify({
    local: { transport: 'stdio', command: 'node', args: ['a.js'], env: { K: 'v' }, cwd: '/tmp', maxProcesses: 3 },
    remote: { url: 'http://127.0.0.1:1/mcp' },
    broken: { transport: 'stdio', args: 'not-a-list', env: { K: 1 }, maxProcesses: 0 },
  });
  const mounts = JSON.stringify({
    '/a': { upstreams: ['local'] },
    '/b': { upstreams: ['remote'] },
    '/c': { upstreams: ['broken'] },
  });
  t.same(problemsOf(['--upstreams', upstreams, '--mounts', mounts]).sort(), [
    'upstreams.broken.args: expected a list of strings',
    'upstreams.broken.command: required when transport is stdio',
    'upstreams.broken.env: expected an object of strings',
    'upstreams.broken.maxProcesses: expected an integer >= 1, not 0',
  ]);
  const good = JSON.stringify({
    local: { transport: 'stdio', command: 'node', args: ['a.js'], cwd: '/tmp', maxProcesses: 3 },
    remote: { url: 'http://127.0.0.1:1/mcp' },
  });
  const multi = loadConfig(
    [
      '--upstreams',
      good,
      '--mounts',
      JSON.stringify({ '/a': { upstreams: ['local'] }, '/b': { upstreams: ['remote'] } }),
      '--upstream.env',
      'BASE=1',
    ],
    {},
  );
  const specs = resolveTopology(multi).topology.upstreams;
  t.match(
    specs.find((u) => u.name === 'local'),
    { transport: 'stdio', command: 'node', args: ['a.js'], cwd: '/tmp', maxProcesses: 3, env: { BASE: '1' } },
  );
  t.match(
    specs.find((u) => u.name === 'remote'),
    { transport: 'streamable-http', urls: ['http://127.0.0.1:1/mcp'] },
  );
});

t.test('quotas: each rule checked, every problem named together', async (t) => {
  const good = {
    calls: { limit: 100, per: 'minute' },
    images: { limit: 2, per: 'day', mount: '/mcp', name: '*image*' },
  };
  t.same(problems(['--upstream.url', 'http://127.0.0.1:1/mcp', '--quotas.rules', JSON.stringify(good)]), []);
  const bad = {
    a: { limit: 0, per: 'minute' },
    b: { limit: 5, per: 'week', methods: 'tools/call' },
    c: { limit: 5, per: 'hour', mount: '/nowhere', name: 3, every: 2 },
    d: 7,
  };
  t.same(problems(['--upstream.url', 'http://127.0.0.1:1/mcp', '--quotas.rules', JSON.stringify(bad)]).sort(), [
    'quotas.rules.a.limit: expected an integer >= 1',
    'quotas.rules.b.methods: expected a list of methods',
    'quotas.rules.b.per: expected minute, hour or day',
    'quotas.rules.c.mount: not a mount path (/mcp)',
    'quotas.rules.c.name: expected a glob',
    'quotas.rules.c: unknown every',
    'quotas.rules.d: expected an object',
  ]);
});

t.test('per-method rate limits: a rate above 0 and a whole burst for each method', async (t) => {
  t.same(
    problems([
      '--limits.rateMethods',
      JSON.stringify({ 'tools/call': { ratePerSecond: 2, burst: 5 }, 'resources/read': { ratePerSecond: 0.5 } }),
    ]),
    [],
  );
  t.same(
    problems([
      '--limits.rateMethods',
      JSON.stringify({
        'tools/call': { ratePerSecond: 0 },
        ping: { ratePerSecond: 1, burst: 1.5 },
        x: { ratePerSecond: 1, every: 2 },
      }),
    ]).sort(),
    [
      'limits.rateMethods.ping: expected {"ratePerSecond": > 0, "burst": integer >= 1 (optional)}',
      'limits.rateMethods.tools/call: expected {"ratePerSecond": > 0, "burst": integer >= 1 (optional)}',
      'limits.rateMethods.x: expected {"ratePerSecond": > 0, "burst": integer >= 1 (optional)}',
    ],
  );
});
