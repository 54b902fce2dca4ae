// The admin port's settings: -1 disables it, 0 picks a free port, anything else must be a port
// number other than the data port's.

import t from 'tap';
import { createApp } from '../../src/app.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';

const base = ['--upstream.url', 'http://127.0.0.1:9/mcp', '--listen.port', '0', '--log.level', 'silent'];

t.test('admin.port accepts -1, 0 and port numbers only', async (t) => {
  t.equal(loadConfig([...base, '--admin.port', '-1'], {}).admin.port, -1);
  t.equal(loadConfig(base, { CAUSEWAY_ADMIN_PORT: '0' }).admin.port, 0);
  t.equal(loadConfig(base, {}).admin.port, 9464, 'default');
  for (const bad of ['-2', '65536', '1.5', 'x']) {
    t.throws(() => loadConfig([...base, '--admin.port', bad], {}), ConfigError, `rejects ${bad}`);
  }
  t.throws(
    () => loadConfig([...base, '--listen.port', '9000', '--admin.port', '9000'], {}),
    ConfigError,
    'not the data port',
  );
});

t.test('admin.port -1 serves no admin port', async (t) => {
  const config = loadConfig([...base, '--admin.port', '-1'], {});
  const app = createApp(config, createLogger('silent'));
  await app.listen();
  t.teardown(() => app.drain());
  t.equal(app.adminUrl, undefined);
  t.equal((await fetch(app.url!.replace(/\/mcp$/, '/metrics'))).status, 404);
});

t.test('the admin port reports not ready while draining, and closes last', async (t) => {
  const config = loadConfig([...base, '--admin.port', '0'], {});
  const app = createApp(config, createLogger('silent'));
  await app.listen();
  t.match(app.adminUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.equal((await fetch(`${app.adminUrl}/readyz`)).status, 200);
  const drained = app.drain();
  const during = await fetch(`${app.adminUrl}/readyz`).then(
    (r) => r.status,
    () => 'closed',
  );
  t.ok(during === 503 || during === 'closed', `readyz while draining: ${during}`);
  await drained;
  await t.rejects(fetch(`${app.adminUrl}/healthz`), 'closed after the drain');
});
