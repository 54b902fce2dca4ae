import { createServer } from 'node:net';
import t from 'tap';
import { CausewayError } from '../../src/errors.js';
import type { JsonRpcRequest } from '../../src/jsonrpc.js';
import { SessionExpiredError, TargetUnreachableError } from '../../src/upstream/core/errors.js';
import { event, json, rawClient, rawServer, reasonOf, SESSION, startSse } from './raw-server.js';
import { until } from '../helpers/until.js';

const LIST: JsonRpcRequest = { jsonrpc: '2.0', id: 5, method: 'tools/list' };
const INIT = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } };

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => new Error('expected a rejection'),
    (e: unknown) => e,
  );
}

t.test('legacy_client-to-raw_upstream-garbage: upstream_bad_response', async (t) => {
  const cases: Record<string, (res: import('node:http').ServerResponse) => void> = {
    'body is not JSON': (res) => json(res, 200, 'not json{'),
    'wrong content type': (res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html></html>');
    },
    'response without id': (res) => json(res, 200, { jsonrpc: '2.0', result: {} }),
    'only another id': (res) => json(res, 200, { jsonrpc: '2.0', id: 6, result: {} }),
    'result is not an object': (res) => json(res, 200, { jsonrpc: '2.0', id: 5, result: 3 }),
    'not a JSON-RPC message': (res) => json(res, 200, { hello: 'world' }),
    'garbage SSE data': (res) => {
      startSse(res);
      res.end(event('{{{'));
    },
    '202 to a request': (res) => res.writeHead(202).end(),
  };
  let current = '';
  const { url } = await rawServer(t, (_req, res) => cases[current]?.(res));
  const { client } = rawClient(t, url);
  for (const name of Object.keys(cases)) {
    current = name;
    t.equal(reasonOf(await failure(client.request(SESSION, LIST, {}))), 'upstream_bad_response', name);
  }
});

t.test('legacy_client-to-raw_upstream-http_status: in-band 4xx, lost session (400 or 404), 5xx', async (t) => {
  let status = 400;
  let answerId: number | null = 5;
  const { url } = await rawServer(t, (_req, res) => {
    if (status === 401) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('no');
      return;
    }
    json(res, status, { jsonrpc: '2.0', id: answerId, error: { code: -32000, message: `status ${status}` } });
  });
  const { client } = rawClient(t, url);

  t.same(
    await client.request(SESSION, LIST, {}),
    { jsonrpc: '2.0', id: 5, error: { code: -32000, message: 'status 400' } },
    "a 400 answering the request is the upstream's in-band answer",
  );
  answerId = null;
  const noAnswer = 'a 400 on a session with no answer to the request: lost';
  await t.rejects(client.request(SESSION, LIST, {}), SessionExpiredError, noAnswer);
  status = 404;
  await t.rejects(client.request(SESSION, LIST, {}), SessionExpiredError);
  t.match(
    await client.request({ sessionId: undefined, protocolVersion: '2025-11-25' }, LIST, {}),
    { id: 5, error: { message: 'status 404' } },
    'without a session id a 404 is an ordinary in-band error',
  );
  status = 200;
  t.same(
    await client.request(SESSION, LIST, {}),
    { jsonrpc: '2.0', id: 5, error: { code: -32000, message: 'status 200' } },
    'an id-less error answers the call it arrived on',
  );
  status = 401;
  t.equal(reasonOf(await failure(client.request(SESSION, LIST, {}))), 'upstream_unavailable');
  status = 503;
  const err = await failure(client.request(SESSION, LIST, {}));
  t.equal(reasonOf(err), 'upstream_unavailable');
  t.match((err as Error).message, /503/);
  t.equal(reasonOf(await failure(client.notify(SESSION, { jsonrpc: '2.0', method: 'x' }))), 'upstream_unavailable');
});

t.test('legacy_client-to-raw_upstream-initialize: JSON-RPC error reply is upstream_unavailable', async (t) => {
  const { url, seen } = await rawServer(t, (_req, res) => {
    json(res, 200, { jsonrpc: '2.0', id: 0, error: { code: -32602, message: 'Unsupported protocol version' } });
  });
  const { client } = rawClient(t, url);
  const err = await failure(client.initialize(INIT));
  t.type(err, CausewayError);
  t.equal(reasonOf(err), 'upstream_unavailable');
  const refused = 'Upstream "raw" refused initialize: Unsupported protocol version';
  t.equal((err as Error).message, refused, 'named as the upstream’s');
  t.equal(seen.length, 1, 'no initialized notification after a refusal');
});

t.test('legacy_client-to-raw_upstream-timeout: upstream_timeout within requestTimeoutMs', async (t) => {
  const { url } = await rawServer(t, (req, res) => {
    if ((req.headers['x-case'] ?? '') === 'sse') {
      startSse(res);
      res.write(event('', { id: 'p' }));
    }
  });
  const { client } = rawClient(t, url, { requestTimeoutMs: 300 });

  // The server never answers, and closes nothing before the test ends: the request can only end
  // by its deadline. Were the deadline not armed (or dropped once an SSE stream starts), it would
  // never end and the test would time out; a deadline shorter than requestTimeoutMs fails the
  // lower bound, which holds on any machine as a timer never fires early.
  for (const c of ['silent', 'sse']) {
    const started = Date.now();
    const err = await failure(client.request(SESSION, LIST, {}, undefined, { 'x-case': c }));
    const took = Date.now() - started;
    t.equal(reasonOf(err), 'upstream_timeout', c);
    t.ok(took >= 290, `${c}: not before requestTimeoutMs`);
    t.comment(`${c}: gave up after ${took} ms (requestTimeoutMs 300)`);
  }
});

t.test(
  'legacy_client-to-raw_upstream-refused: the session must move (never sent), initialize is upstream_unavailable',
  async (t) => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as import('node:net').AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const { client } = rawClient(t, `http://127.0.0.1:${port}/mcp`);

    const err = await failure(client.request(SESSION, LIST, {}));
    t.type(err, TargetUnreachableError, 'the pool re-opens the session elsewhere and sends the request again');
    t.match((err as Error).cause, { code: 'ECONNREFUSED' });
    t.equal(reasonOf(await failure(client.initialize(INIT))), 'upstream_unavailable');
    await client.terminate(SESSION);
    t.pass('terminate never throws');
  },
);

t.test('legacy_client-to-raw_upstream-oversized: upstream_bad_response', async (t) => {
  const big = { jsonrpc: '2.0', id: 5, result: { pad: 'x'.repeat(4096) } };
  let mode = 'length';
  const { url } = await rawServer(t, (_req, res) => {
    if (mode === 'length') {
      json(res, 200, big);
    } else if (mode === 'chunked') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const text = JSON.stringify(big);
      res.write(text.slice(0, 2000));
      res.end(text.slice(2000));
    } else {
      startSse(res);
      res.end(event(big));
    }
  });
  const { client } = rawClient(t, url, { maxResponseBytes: 1024 });
  for (const m of ['length', 'chunked', 'sse']) {
    mode = m;
    t.equal(reasonOf(await failure(client.request(SESSION, LIST, {}))), 'upstream_bad_response', m);
  }
});

t.test('legacy_client-to-raw_upstream-abort: rejects with the abort reason, promptly', async (t) => {
  let closed = 0;
  const { url } = await rawServer(t, (req, res) => {
    res.on('close', () => (closed += 1));
    if (req.headers['x-case'] === 'sse') {
      startSse(res);
      res.write(event('', { id: 'p' }));
    }
  });
  // No deadline the test could reach: the server never answers, so only the caller's abort can
  // end a request. An abort that is not acted on leaves it hanging (the test times out); one
  // acted on late, at the deadline, would reject with upstream_timeout, not the caller's reason.
  const { client } = rawClient(t, url, { requestTimeoutMs: 600_000 });

  for (const c of ['silent', 'sse']) {
    const ac = new AbortController();
    const reason = new Error(`caller went away (${c})`);
    setTimeout(() => ac.abort(reason), 50);
    const started = Date.now();
    const err = await failure(client.request(SESSION, LIST, {}, ac.signal, { 'x-case': c }));
    t.equal(err, reason, `${c}: the caller's own reason`);
    t.comment(`${c}: rejected ${Date.now() - started} ms after the call (aborted at 50 ms)`);
  }
  const pre = new AbortController();
  pre.abort();
  t.equal(await failure(client.request(SESSION, LIST, {}, pre.signal)), pre.signal.reason, 'already aborted');
  await until(() => closed >= 2, { what: 'both connections to close' }).catch(() => undefined);
  t.equal(closed, 2, 'the upstream saw both connections close');
});

t.test('legacy_client-to-raw_upstream-destroy: in-flight calls fail, new calls refused', async (t) => {
  const { url, seen } = await rawServer(t, () => undefined);
  const { client } = rawClient(t, url);
  const pending = failure(client.request(SESSION, LIST, {}));
  await until(() => seen.length > 0, { what: 'the call to reach the upstream' });
  await client.destroy();
  t.equal(reasonOf(await pending), 'upstream_unavailable');
  t.equal(reasonOf(await failure(client.request(SESSION, LIST, {}))), 'upstream_unavailable');
});
