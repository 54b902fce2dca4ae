// A Host or Origin the settings do not allow: the 403 names the value refused and the setting
// that would let it in, and the replica says so at info once per value, not once per request
// (src/ingress/request-steps.ts notAllowed).

import t from 'tap';
import { OnceEach } from '../../src/bounded.js';
import { startCauseway } from '../helpers/causeway.js';
import { modernBody, modernHeaders, post } from '../e2e/wire.js';

// Nothing is sent upstream: the front door refuses first.
const causeway = await startCauseway({ 'upstream.url': 'http://127.0.0.1:9/mcp', 'log.level': 'info' });
t.teardown(() => causeway.close());

const list = (extra: Record<string, string>) =>
  post(causeway.url, modernBody('tools/list'), { ...modernHeaders('tools/list'), ...extra });
const linesWith = (text: string) =>
  causeway.logs.filter((l) => l.includes(text)).map((l) => JSON.parse(l) as Record<string, unknown>);

t.test('a Host not allowed: named with security.allowedHosts, logged once per host', async (t) => {
  for (let i = 0; i < 3; i++) {
    const res = await list({ host: 'mcp.example.com:8080' });
    t.equal(res.status, 403);
    t.equal(res.json?.error?.message, 'Host "mcp.example.com" not allowed: add it to security.allowedHosts');
  }
  t.equal((await list({ host: 'other.example' })).status, 403, 'a second host');
  const about = (host: string) => linesWith('refused: not in security.allowedHosts').filter((l) => l.host === host);
  t.equal(about('mcp.example.com').length, 1, 'one line for three requests');
  const first = about('mcp.example.com')[0];
  t.match(first, { level: 30, reason: 'forbidden_host', setting: 'security.allowedHosts' }, 'at info');
  t.equal(about('other.example').length, 1, 'and one for the other host');
});

t.test('an Origin not allowed: named with security.allowedOrigins, logged once per origin', async (t) => {
  for (let i = 0; i < 2; i++) {
    const res = await list({ origin: 'https://app.example' });
    t.equal(res.status, 403);
    t.equal(res.json?.error?.message, 'Origin "https://app.example" not allowed: add it to security.allowedOrigins');
  }
  const lines = linesWith('refused: not in security.allowedOrigins');
  t.equal(lines.length, 1, 'one line for two requests');
  t.match(lines[0], { level: 30, reason: 'forbidden_origin', origin: 'https://app.example' });
});

t.test('the hosts remembered are bounded: the oldest is forgotten first', async (t) => {
  const once = new OnceEach(2);
  t.ok(once.first('a'), 'a first');
  t.notOk(once.first('a'), 'a again');
  t.ok(once.first('b'));
  t.ok(once.first('c'), 'c, and a forgotten');
  t.notOk(once.first('b'), 'b still remembered');
  t.ok(once.first('a'), 'a is new again');
});
