// What a reload may change (config/live.ts): the live settings of the new configuration over the
// running one's others, the others that differ named as needing a restart; and a configuration's
// hash, the same whatever the order of its keys.

import t from 'tap';
import { configHash, isLive, liveChanges, same } from '../../src/config/live.js';
import { loadConfig } from '../../src/config/load.js';

const running = loadConfig(['--upstream.url', 'http://127.0.0.1:1/mcp'], {});

t.test('live settings are taken, the others kept and named', async (t) => {
  const next = loadConfig(
    [
      '--upstream.url',
      'http://127.0.0.1:2/mcp',
      '--limits.ratePerSecond',
      '5',
      '--limits.maxHeaderBytes',
      '8192',
      '--listen.port',
      '9000',
    ],
    {},
  );
  const { applied, restartNeeded } = liveChanges(running, next);
  t.equal(applied.upstream.url, 'http://127.0.0.1:2/mcp');
  t.equal(applied.limits.ratePerSecond, 5);
  t.equal(applied.limits.maxHeaderBytes, running.limits.maxHeaderBytes, 'a listener setting keeps its value');
  t.equal(applied.listen.port, running.listen.port);
  t.same(restartNeeded.sort(), ['limits.maxHeaderBytes', 'listen.port']);
  t.ok(Object.isFrozen(applied.limits), 'frozen as a loaded config is');
});

t.test('the same configuration again changes nothing', async (t) => {
  const { applied, restartNeeded } = liveChanges(running, loadConfig(['--upstream.url', 'http://127.0.0.1:1/mcp'], {}));
  t.same(restartNeeded, []);
  t.ok(same(applied, running));
  t.equal(configHash(applied), configHash(running));
});

t.test('which settings are live', async (t) => {
  for (const path of ['upstream.url', 'upstreams', 'mounts', 'auth.rules', 'quotas.rules', 'cache.scope', 'skills.dir'])
    t.ok(isLive(path), path);
  for (const path of ['listen.port', 'store.kind', 'auth.mode', 'cache.maxBytes', 'log.level', 'upstreamsX'])
    t.notOk(isLive(path), path);
});

t.test('the hash does not depend on the order of keys', async (t) => {
  const mounts = ['--mounts', '{"/mcp":{"upstreams":["x","y"]}}'];
  const a = loadConfig(
    ['--upstreams', '{"x":{"url":"http://127.0.0.1:1/mcp"},"y":{"url":"http://127.0.0.1:2/mcp"}}', ...mounts],
    {},
  );
  const b = loadConfig(
    ['--upstreams', '{"y":{"url":"http://127.0.0.1:2/mcp"},"x":{"url":"http://127.0.0.1:1/mcp"}}', ...mounts],
    {},
  );
  t.equal(configHash(a), configHash(b));
  t.match(configHash(a), /^[\da-f]{12}$/);
  t.not(configHash(a), configHash(running));
});
