// The composed HTTP client of one upstream (http/compose/), against raw servers: a new session's
// request fails over past a URL that refuses connections and keeps the one that answered; an
// unreachable target is a TargetUnreachableError when the session may move; each request to the
// upstream's URLs carries its credential, and a 401 earns exactly one retry with a new token, or
// the credential's own error; requests to other URLs pass untouched.

import { createServer } from 'node:net';
import t, { type Test } from 'tap';
import { CausewayError } from '../../src/errors.js';
import type { UpstreamAuthorization } from '../../src/upstream/credentials/credentials.js';
import { TargetUnreachableError } from '../../src/upstream/core/errors.js';
import { TargetSet } from '../../src/upstream/core/targets.js';
import { UpstreamHttp, type UpstreamRequest } from '../../src/upstream/http/compose/index.js';
import { json, rawServer } from './raw-server.js';

/** A URL on which nothing listens: connecting is refused. */
async function refusingUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}/mcp`;
}

function client(
  t: Test,
  urls: string[],
  credentials?: UpstreamAuthorization,
  ejected: number[] = [],
): { http: UpstreamHttp; targets: TargetSet } {
  const targets = new TargetSet(
    urls,
    { ejectAfterFailures: 1, ejectMs: 60_000 },
    { onEject: (_url, i) => ejected.push(i) },
  );
  const http = new UpstreamHttp({
    connectTimeoutMs: 1000,
    requestTimeoutMs: 3000,
    upstream: { name: 'up', targets, credentials },
  });
  t.teardown(() => http.destroy());
  return { http, targets };
}

function post(fields: Partial<UpstreamRequest>): UpstreamRequest {
  return { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', ...fields };
}

/** Tokens t1, t2, ...: a new one after each refusal; what was refused, and whether it was the last try. */
function tokens(onRefused?: (sent: string | undefined, last: boolean) => Promise<boolean>) {
  let n = 1;
  const refusals: Array<{ principal: string | undefined; sent: string | undefined; last: boolean }> = [];
  const credentials: UpstreamAuthorization = {
    authorization: async () => `Bearer t${n}`,
    refused: async (principal, sent, last) => {
      refusals.push({ principal, sent, last });
      n += 1;
      return onRefused ? onRefused(sent, last) : !last;
    },
  };
  return { credentials, refusals };
}

t.test(
  'a new session fails over past a URL that refuses connections; the one that answered is its target',
  async (t) => {
    const down = await refusingUrl();
    const up = await rawServer(t, (_req, res) => json(res, 200, { ok: true }));
    const ejected: number[] = [];
    const { http, targets } = client(t, [down, up.url], undefined, ejected);
    const req = post({ failover: true, movable: true });
    const res = await http.request(req);
    t.equal(res.statusCode, 200);
    t.same(await res.body.json(), { ok: true });
    t.equal(req.target, up.url, 'the URL that answered is the request’s target');
    t.same(ejected, [0], 'the refusing URL was ejected');
    t.equal(targets.admits(down), false);
    t.equal(up.seen.length, 1, 'the request was sent once');
  },
);

t.test(
  'an unreachable target: TargetUnreachableError when the session may move, the transport error otherwise',
  async (t) => {
    const down = await refusingUrl();
    const { http } = client(t, [down]);
    const moved = await http.request(post({ target: down, movable: true })).catch((err: unknown) => err);
    t.ok(moved instanceof TargetUnreachableError, 'movable');
    t.equal((moved as { cause?: { code?: string } }).cause?.code, 'ECONNREFUSED');
    const raw = await http.request(post({ target: down })).catch((err: unknown) => err);
    t.notOk(raw instanceof TargetUnreachableError, 'not movable');
    t.equal((raw as { code?: string }).code, 'ECONNREFUSED');
    const unknown = await http.request(post({ target: 'http://127.0.0.1:1/elsewhere' })).catch((err: unknown) => err);
    t.ok(unknown instanceof TargetUnreachableError, 'a URL the upstream does not list');
  },
);

t.test('a 401 earns one retry with a new token; a second 401 is the answer', async (t) => {
  let refuse = 'Bearer t1';
  const server = await rawServer(t, (req, res) => {
    if (req.headers.authorization === refuse || refuse === '*')
      void res.writeHead(401, { 'content-type': 'text/plain' }).end('no');
    else json(res, 200, { ok: true });
  });
  const { credentials, refusals } = tokens();
  const { http } = client(t, [server.url], credentials);

  const res = await http.request(post({ target: server.url, principal: 'p1' }));
  t.equal(res.statusCode, 200);
  await res.body.dump();
  t.same(
    server.seen.map((s) => s.headers.authorization),
    ['Bearer t1', 'Bearer t2'],
    'the retry carries the new token',
  );
  t.same(refusals, [{ principal: 'p1', sent: 'Bearer t1', last: false }]);

  refuse = '*';
  server.seen.length = 0;
  const relayed = await http.request(post({ target: server.url, principal: 'p1' }));
  t.equal(relayed.statusCode, 401, 'the second 401 reaches the caller');
  t.equal(await relayed.body.text(), 'no', 'with its body');
  t.equal(server.seen.length, 2, 'one retry, not a loop');
  t.same(
    refusals.slice(1).map((r) => r.last),
    [false, true],
  );
});

t.test('a 401 too long to read away: its connection is dropped, and the retry still goes', async (t) => {
  const server = await rawServer(t, (req, res) => {
    if (req.headers.authorization === 'Bearer t1')
      void res.writeHead(401, { 'content-type': 'text/plain' }).end('x'.repeat(512 * 1024));
    else json(res, 200, { ok: true });
  });
  const { credentials } = tokens();
  const { http } = client(t, [server.url], credentials);
  const res = await http.request(post({ target: server.url }));
  t.equal(res.statusCode, 200);
  t.same(await res.body.json(), { ok: true });
});

t.test('a credential that answers a 401 with its own error fails the request with it', async (t) => {
  const server = await rawServer(t, (_req, res) => void res.writeHead(401, { 'content-type': 'text/plain' }).end('no'));
  const signIn = new CausewayError('upstream_authorization_required', 'Sign in to up to go on');
  const { credentials } = tokens(async () => {
    throw signIn;
  });
  const { http } = client(t, [server.url], credentials);
  const err = await http.request(post({ target: server.url, principal: 'p1' })).catch((e: unknown) => e);
  t.equal(err, signIn);
  t.equal(server.seen.length, 1);
});

t.test(
  'an abort while the credential weighs a 401 ends the request with the abort reason, and no retry goes',
  async (t) => {
    const server = await rawServer(
      t,
      (_req, res) => void res.writeHead(401, { 'content-type': 'text/plain' }).end('no'),
    );
    const ac = new AbortController();
    const reason = new Error('the client went away');
    const { credentials } = tokens(async () => {
      ac.abort(reason);
      return true;
    });
    const { http } = client(t, [server.url], credentials);
    const err = await http.request(post({ target: server.url, signal: ac.signal })).catch((e: unknown) => e);
    t.equal(err, reason);
    t.equal(server.seen.length, 1);
  },
);

t.test('a request to no URL of the upstream’s passes untouched: no credential, no health kept', async (t) => {
  const server = await rawServer(t, (_req, res) => json(res, 200, {}));
  const other = await rawServer(t, (_req, res) => json(res, 200, {}));
  const { credentials, refusals } = tokens();
  const { http } = client(t, [server.url], credentials);
  const { origin, pathname } = new URL(other.url);
  const res = await http.dispatcher.request({ origin, path: pathname, method: 'GET', headers: {} });
  await res.body.dump();
  t.equal(other.seen.length, 1);
  t.equal(other.seen[0]!.headers.authorization, undefined);
  t.equal(server.seen.length, 0);
  t.same(refusals, []);
});
