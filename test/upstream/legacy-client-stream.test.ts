import t from 'tap';
import type { JsonRpcNotification, JsonRpcRequest } from '../../src/jsonrpc.js';
import { event, isPost, json, RAW_SECRET, rawClient, rawServer, reasonOf, SESSION, startSse } from './raw-server.js';
import { until } from '../helpers/until.js';
import { SessionExpiredError } from '../../src/upstream/core/errors.js';

const progress = (n: number): JsonRpcNotification => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: 'tok', progress: n },
});
const CALL: JsonRpcRequest = { jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'slow' } };
const DONE = { jsonrpc: '2.0', id: 41, result: { content: [] } };

t.test('legacy_client-to-raw_upstream-resume: priming + retry:50, then GET with Last-Event-ID', async (t) => {
  let postEndedAt = 0;
  const { url, seen } = await rawServer(t, (req, res) => {
    startSse(res);
    if (req.method === 'POST') {
      res.write(event('', { id: 'p1', retry: 50 }));
      res.write(event(progress(1), { id: 'e1' }));
      postEndedAt = Date.now();
      res.end();
      return;
    }
    res.write(event(progress(2), { id: 'e2' }));
    res.end(event(DONE, { id: 'e3' }));
  });
  const { client, sink } = rawClient(t, url);
  const notes: JsonRpcNotification[] = [];

  const res = await client.request(SESSION, CALL, { onNotification: (n) => notes.push(n) });

  t.same(res, DONE);
  t.same(
    notes.map((n) => n.params?.progress),
    [1, 2],
  );
  const get = seen.find((s) => s.method === 'GET');
  t.equal(get?.headers['last-event-id'], 'e1', 'resumed after the last event id seen');
  t.equal(get?.headers['accept'], 'text/event-stream');
  t.equal(get?.headers['mcp-session-id'], SESSION.sessionId);
  t.equal(get?.headers['mcp-protocol-version'], '2025-11-25');
  t.equal(get?.headers['authorization'], RAW_SECRET);
  const waited = (get?.at ?? 0) - postEndedAt;
  t.ok(waited >= 45, `waited ${waited} ms, at least retry: 50`);
  t.ok(waited < 800, `waited ${waited} ms, retry: 50 honoured instead of the default`);
  t.notOk(sink.text().includes(SESSION.sessionId ?? '-'), 'session id never logged');
  t.notOk(sink.text().includes('raw-secret-token'), 'credentials never logged');
});

t.test('legacy_client-to-raw_upstream-resume: connection dropped mid-stream', async (t) => {
  const { url, seen } = await rawServer(t, (req, res) => {
    startSse(res);
    if (req.method === 'POST') {
      res.write(event(progress(1), { id: 'd1', retry: 10 }));
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    res.end(event(DONE));
  });
  const { client } = rawClient(t, url);

  t.same(await client.request(SESSION, CALL, {}), DONE);
  t.equal(seen.find((s) => s.method === 'GET')?.headers['last-event-id'], 'd1');
});

t.test('legacy_client-to-raw_upstream-resume: bounded attempts without progress', async (t) => {
  const { url, seen } = await rawServer(t, (req, res) => {
    startSse(res);
    if (req.method === 'POST') res.write(event('', { id: 'p1', retry: 5 }));
    res.end();
  });
  const { client } = rawClient(t, url, {}, { maxResumeAttempts: 3 });

  const err = await client.request(SESSION, CALL, {}).catch((e: unknown) => e);
  t.equal(reasonOf(err), 'upstream_unavailable');
  t.equal(seen.filter((s) => s.method === 'GET').length, 3);
});

t.test('legacy_client-to-raw_upstream-resume: no event id means no resume', async (t) => {
  let drop = false;
  const { url, seen } = await rawServer(t, (_req, res) => {
    startSse(res);
    res.write(event(progress(1)));
    if (drop) setTimeout(() => res.socket?.destroy(), 10);
    else res.end();
  });
  const { client } = rawClient(t, url);

  const ended = await client.request(SESSION, CALL, {}).catch((e: unknown) => e);
  t.equal(reasonOf(ended), 'upstream_bad_response', 'clean end without a response');
  drop = true;
  const dropped = await client.request(SESSION, CALL, {}).catch((e: unknown) => e);
  t.equal(reasonOf(dropped), 'upstream_unavailable', 'dropped connection without a response');
  t.notOk(seen.some((s) => s.method === 'GET'));
});

t.test('legacy_client-to-raw_upstream-batch: 2025-03-26 arrays in SSE data and in a JSON body', async (t) => {
  const { url, seen } = await rawServer(t, (_req, res, body) => {
    const id = (body as { id: number }).id;
    if (id === 7) {
      startSse(res);
      res.end(event([progress(1), { jsonrpc: '2.0', id: 7, result: { via: 'sse' } }, progress(2)]));
      return;
    }
    json(res, 200, [
      { jsonrpc: '2.0', id: 99, result: { via: 'other' } },
      { jsonrpc: '2.0', id, result: { via: 'json' } },
    ]);
  });
  const { client } = rawClient(t, url);
  const old = { sessionId: 'sess-old', protocolVersion: '2025-03-26' };
  const notes: JsonRpcNotification[] = [];

  const viaSse = await client.request(
    old,
    { jsonrpc: '2.0', id: 7, method: 'tools/list' },
    {
      onNotification: (n) => notes.push(n),
    },
  );
  t.same(viaSse, { jsonrpc: '2.0', id: 7, result: { via: 'sse' } });
  t.equal(notes.length, 2, 'every message of the batch is routed');

  const viaJson = await client.request(old, { jsonrpc: '2.0', id: 8, method: 'tools/list' }, {});
  t.same(viaJson, { jsonrpc: '2.0', id: 8, result: { via: 'json' } });
  for (const s of seen) t.equal(s.headers['mcp-protocol-version'], undefined, 'no version header for 2025-03-26');
});

t.test('legacy_client-to-raw_upstream-server_requests: ping answered, unhandled ones refused', async (t) => {
  let stream: import('node:http').ServerResponse | undefined;
  const { url, seen } = await rawServer(t, (_req, res, body) => {
    if (isPost(body, 'method', 'tools/call')) {
      stream = res;
      startSse(res);
      res.write(event({ jsonrpc: '2.0', id: 'srv-1', method: 'ping' }));
      res.write(event({ jsonrpc: '2.0', id: 'srv-2', method: 'roots/list' }));
      return;
    }
    res.writeHead(202).end();
    if (seen.filter((s) => isPost(s.body, 'result') || isPost(s.body, 'error')).length === 2) {
      stream?.end(event(DONE));
    }
  });
  const { client } = rawClient(t, url);

  t.same(await client.request(SESSION, CALL, {}), DONE);
  const pong = seen.find((s) => isPost(s.body, 'result'));
  t.same(pong?.body, { jsonrpc: '2.0', id: 'srv-1', result: {} });
  t.equal(pong?.headers['mcp-session-id'], SESSION.sessionId);
  t.match(seen.find((s) => isPost(s.body, 'error'))?.body, { id: 'srv-2', error: { code: -32601 } });
});

t.test('legacy_client-to-raw_upstream-get_stream: resumes with Last-Event-ID, ends on abort', async (t) => {
  let gets = 0;
  const { url, seen } = await rawServer(t, (req, res) => {
    if (req.method !== 'GET') {
      res.writeHead(202).end();
      return;
    }
    gets += 1;
    startSse(res);
    if (gets === 1) {
      res.end(event({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, { id: 'g1', retry: 20 }));
      return;
    }
    res.write(event({ jsonrpc: '2.0', id: 'srv-ping', method: 'ping' }, { id: 'g2' }));
    res.write(event({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' }, { id: 'g3' }));
  });
  const { client } = rawClient(t, url);
  const notes: JsonRpcNotification[] = [];
  const ac = new AbortController();

  const stream = await client.openStream(SESSION, { onNotification: (n) => notes.push(n) }, ac.signal);
  if (stream === 'unsupported') throw new Error('expected a stream');
  await until(() => notes.length === 2 && seen.some((s) => isPost(s.body, 'result')), {
    what: 'both notes and the answer upstream',
  });

  t.same(
    notes.map((n) => n.method),
    ['notifications/tools/list_changed', 'notifications/resources/list_changed'],
  );
  const second = seen.filter((s) => s.method === 'GET')[1];
  t.equal(second?.headers['last-event-id'], 'g1');
  t.same(seen.find((s) => isPost(s.body, 'result'))?.body, { jsonrpc: '2.0', id: 'srv-ping', result: {} });
  ac.abort();
  await stream.done;
  t.pass('done resolves on abort');
});

t.test('legacy_client-to-raw_upstream-get_stream: 405 unsupported, re-open failures reject done', async (t) => {
  let gets = 0;
  const { url } = await rawServer(t, (_req, res) => {
    gets += 1;
    if (gets === 1) {
      json(res, 405, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Method not allowed.' } });
      return;
    }
    if (gets === 2) {
      startSse(res);
      res.end(event('', { id: 'x', retry: 5 }));
      return;
    }
    res.writeHead(503).end();
  });
  const { client } = rawClient(t, url, {}, { maxResumeAttempts: 2 });
  const ac = new AbortController();

  t.equal(await client.openStream(SESSION, {}, ac.signal), 'unsupported');
  const stream = await client.openStream(SESSION, {}, ac.signal);
  if (stream === 'unsupported') throw new Error('expected a stream');
  const err = await stream.done.catch((e: unknown) => e);
  t.equal(reasonOf(err), 'upstream_unavailable');
});

t.test('legacy_client-to-raw_upstream-get_stream: a 400 rejecting the session ends the stream, lost', async (t) => {
  // server-everything, restarted: a GET on a session it does not know is 400 -32000 with no id.
  const unknown = { jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' } };
  let gets = 0;
  const { url } = await rawServer(t, (req, res) => {
    if (req.method !== 'GET') {
      res.writeHead(202).end();
      return;
    }
    gets += 1;
    if (gets === 1) {
      startSse(res);
      res.end(event('', { id: 'g1', retry: 5 }));
      return;
    }
    json(res, 400, unknown);
  });
  const { client } = rawClient(t, url);
  const stream = await client.openStream(SESSION, {}, new AbortController().signal);
  if (stream === 'unsupported') throw new Error('expected a stream');
  const ended = await stream.done.catch((e: unknown) => e);
  t.type(ended, SessionExpiredError, 're-opened on a session the server forgot: lost');
  t.equal(gets, 2, 'not retried on the lost session');
  await t.rejects(client.openStream(SESSION, {}, new AbortController().signal), SessionExpiredError, 'a first GET too');
});

t.test('legacy_client-to-raw_upstream-resume: retry: is capped by maxRetryMs', async (t) => {
  let postEndedAt = 0;
  const { url, seen } = await rawServer(t, (req, res) => {
    startSse(res);
    if (req.method === 'POST') {
      postEndedAt = Date.now();
      res.end(event('', { id: 'p1', retry: 60_000 }));
      return;
    }
    res.end(event(DONE));
  });
  const { client } = rawClient(t, url, {}, { maxRetryMs: 30 });

  t.same(await client.request(SESSION, CALL, {}), DONE);
  const waited = (seen.find((s) => s.method === 'GET')?.at ?? 0) - postEndedAt;
  t.ok(waited < 500, `waited ${waited} ms, not a minute`);
});

t.test('legacy_client-to-raw_upstream-close: ends standalone streams, then resolves', async (t) => {
  const { url } = await rawServer(t, (_req, res) => {
    startSse(res);
    res.write(': open\n\n');
  });
  const { client } = rawClient(t, url);
  const stream = await client.openStream(SESSION, {}, new AbortController().signal);
  if (stream === 'unsupported') throw new Error('expected a stream');

  await client.close();
  await stream.done;
  t.pass('close() does not wait on an idle GET stream');
  t.equal(reasonOf(await client.request(SESSION, CALL, {}).catch((e: unknown) => e)), 'upstream_unavailable');
});

t.test('legacy_client-to-raw_upstream-keep_alive: sockets are reused across calls', async (t) => {
  const { url, connections } = await rawServer(t, (_req, res, body) => {
    if (isPost(body, 'method', 'tools/list')) json(res, 200, { jsonrpc: '2.0', id: 1, result: {} });
    else res.writeHead(202).end();
  });
  const { client } = rawClient(t, url);
  for (let i = 0; i < 3; i++) {
    await client.request(SESSION, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {});
    await client.notify(SESSION, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
  }
  t.ok(connections() <= 2, `${connections()} sockets for 6 calls`);
});
