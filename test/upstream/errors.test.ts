import t from 'tap';
import { CausewayError } from '../../src/errors.js';
import { SessionExpiredError, toUpstreamError, TRANSPORT_ERROR_REASONS } from '../../src/upstream/core/errors.js';
import { sendsVersionHeader, upstreamHeaders } from '../../src/upstream/core/headers.js';

function coded(code: string): Error {
  return Object.assign(new Error(code), { code });
}

t.test('upstream-errors: every table row maps, the cause is kept', async (t) => {
  for (const [code, reason] of Object.entries(TRANSPORT_ERROR_REASONS)) {
    const cause = coded(code);
    const err = toUpstreamError(cause);
    t.type(err, CausewayError, code);
    t.match(err, { reason, cause }, code);
  }
  t.match(toUpstreamError(coded('UND_ERR_CONNECT_TIMEOUT')), { reason: 'upstream_unavailable' });
  t.match(toUpstreamError(coded('UND_ERR_HEADERS_TIMEOUT')), { reason: 'upstream_timeout' });
  t.match(toUpstreamError(coded('HPE_INVALID_CONSTANT')), { reason: 'upstream_bad_response' });
  t.match(toUpstreamError(coded('ESOMETHINGNEW')), { reason: 'upstream_unavailable' });
});

t.test('upstream-errors: own errors pass through, bugs stay bugs', async (t) => {
  const expired = new SessionExpiredError('u1');
  t.equal(toUpstreamError(expired), expired);
  t.equal(expired.name, 'SessionExpiredError');
  t.equal(expired.upstream, 'u1');
  const own = new CausewayError('upstream_timeout');
  t.equal(toUpstreamError(own), own);
  const bug = new TypeError('x is undefined');
  t.equal(toUpstreamError(bug), bug);
});

t.test('upstream-headers: version rules, protocol headers win, names lower-cased', async (t) => {
  t.notOk(sendsVersionHeader('2024-11-05'));
  t.notOk(sendsVersionHeader('2025-03-26'));
  t.ok(sendsVersionHeader('2025-06-18'));
  t.ok(sendsVersionHeader('2025-11-25'));
  const configured = { Authorization: 'Bearer x', 'Mcp-Session-Id': 'forged', Accept: '*/*' };
  const session = { sessionId: 's1', protocolVersion: '2025-06-18' };
  t.same(upstreamHeaders('post', session, configured, { 'Mcp-Method': 'tools/call' }), {
    authorization: 'Bearer x',
    accept: 'application/json, text/event-stream',
    'mcp-method': 'tools/call',
    'content-type': 'application/json',
    'mcp-session-id': 's1',
    'mcp-protocol-version': '2025-06-18',
  });
  t.same(upstreamHeaders('initialize', undefined, configured), {
    authorization: 'Bearer x',
    accept: 'application/json, text/event-stream',
    'content-type': 'application/json',
  });
  t.same(upstreamHeaders('get', { sessionId: undefined, protocolVersion: '2025-03-26' }, undefined, undefined, 'e9'), {
    accept: 'text/event-stream',
    'last-event-id': 'e9',
  });
});
