// An upstream that refuses Causeway's requests, as a wrong upstream.url makes it: a real legacy
// server answering 404 on a path it does not serve. The client's 502 and the warning logged say
// which upstream answered which status to which method and path, and what to check; never the
// URL's query (it may hold a credential).

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { modernBody, modernHeaders, post } from './wire.js';

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());

const WANT = 'Upstream "tickets" answered HTTP 404 to POST /wrong-path: check upstream.url';

t.test('a wrong upstream path: the 502 and the log name the status, upstream, path and the setting', async (t) => {
  const wrong = new URL('/wrong-path?token=s3cret-in-query', upstream.url).href;
  const causeway = await startCauseway({ 'upstream.url': wrong, 'upstream.name': 'tickets', 'log.level': 'info' });
  t.teardown(() => causeway.close());
  const res = await post(causeway.url, modernBody('tools/list'), modernHeaders('tools/list'));
  t.equal(res.status, 502);
  t.match(res.json, { error: { code: -32603, message: WANT } }, 'the client is told where and what to check');

  const lines = causeway.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
  const failed = lines.filter((l) => l.msg === 'request failed');
  t.equal(failed.length, 1, 'one line for the failed request');
  t.match(failed[0], { level: 40, reason: 'upstream_unavailable', message: WANT }, 'at warn, in the same words');
  const probe = lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('the upstream speaks'));
  t.match(probe, { status: 404, msg: /answered HTTP 404.*check upstream\.url/ }, 'the era probe says what it saw');
  t.notOk(
    causeway.logs.some((l) => l.includes('s3cret-in-query')),
    'the query is never logged',
  );
  t.notOk(res.text.includes('s3cret-in-query'), 'nor sent to the client');
});

t.test(
  'an upstream refusing the version Causeway offered: reported as its refusal, with what it supports',
  async (t) => {
    const modern = await startModernServer();
    t.teardown(() => modern.close());
    const causeway = await startCauseway({
      'upstream.url': modern.url,
      'upstream.name': 'next',
      'upstream.era': 'legacy',
    });
    t.teardown(() => causeway.close());
    const res = await post(causeway.url, modernBody('tools/list'), modernHeaders('tools/list'));
    t.equal(res.status, 502);
    const error = res.json?.error as { message: string; data?: { supported?: string[]; offered?: string } };
    t.match(error.message, /^Upstream "next" does not support protocol version 2025-11-25, which Causeway offered it/);
    t.match(error.message, /it supports 2026-07-28/, 'and says what it supports');
    t.notMatch(
      error.message,
      /^Unsupported protocol version/,
      'not the upstream’s words, which read as the client’s fault',
    );
    t.ok(error.data?.supported?.includes('2026-07-28'), 'the upstream’s supported list is in data');
    t.equal(error.data?.offered, '2025-11-25');
  },
);
