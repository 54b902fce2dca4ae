// The response classes the front door's servers make carry the request id into every head,
// however a writer writes it: one header object (copied, never changed: it may be a shared
// constant), a status message with headers, an array of headers, no headers at all (an implicit
// head from end()), over HTTP/1.1 and HTTP/2; a response of another class gets it at once. A
// request that brings no id gets a random version 4 UUID, a new one each time. A head the JSON
// writer made with the id in it already is sent as it is, the id once.

import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { H1Response, H2Response, newRequestId, sendJson, tagResponse } from '../../src/egress/index.js';

const SHARED = Object.freeze({ 'content-type': 'text/plain', 'x-writer': 'shared' });

/** How each path writes its head; the id is tagged first, as the front door does. */
const WRITERS: Record<string, (res: ServerResponse | http2.Http2ServerResponse) => void> = {
  '/object': (res) => {
    res.writeHead(200, SHARED);
    res.end('object');
  },
  '/message': (res) => {
    (res as ServerResponse).writeHead(200, 'Fine', { 'x-writer': 'message' });
    res.end('message');
  },
  '/array': (res) => {
    (res as ServerResponse).writeHead(200, ['x-writer', 'array']);
    res.end('array');
  },
  '/implicit': (res) => {
    res.setHeader('x-writer', 'implicit');
    res.end('implicit');
  },
  // A head made for this response alone, the id in it already: sent once, as it is.
  '/json': (res) => sendJson(res, 200, { writer: 'json' }),
};

function handler(req: { url?: string }, res: ServerResponse | http2.Http2ServerResponse): void {
  tagResponse(res, `id${req.url}`);
  WRITERS[req.url ?? '']!(res);
}

async function listen(server: http.Server | http2.Http2Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

async function h1Get(port: number, path: string): Promise<IncomingHttpHeaders> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.headers));
      })
      .on('error', reject);
  });
}

t.test(
  'HTTP/1.1: every way of writing a head carries the id, and a shared header object is left as it was',
  async (t) => {
    const server = http.createServer({ ServerResponse: H1Response as typeof http.ServerResponse }, handler);
    t.teardown(() => server.close());
    const port = await listen(server);
    for (const path of Object.keys(WRITERS)) {
      const h = await h1Get(port, path);
      t.equal(h['x-request-id'], `id${path}`, `${path}: the id`);
      if (path === '/json') continue;
      t.equal(h['x-writer'], path === '/object' ? 'shared' : path.slice(1), `${path}: the writer's own header`);
    }
    t.same(Object.keys(SHARED), ['content-type', 'x-writer'], 'the frozen header object was copied, not changed');
  },
);

t.test('HTTP/2: the same', async (t) => {
  const server = http2.createServer({ Http2ServerResponse: H2Response as typeof http2.Http2ServerResponse }, handler);
  t.teardown(() => server.close());
  const port = await listen(server);
  const session = http2.connect(`http://127.0.0.1:${port}`);
  t.teardown(() => session.close());
  for (const path of ['/object', '/message', '/implicit', '/json']) {
    const h = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const stream = session.request({ ':path': path });
      let head: http2.IncomingHttpHeaders = {};
      stream.on('response', (r) => (head = r));
      stream.on('error', reject);
      stream.resume();
      stream.on('end', () => resolve(head));
    });
    t.equal(h['x-request-id'], `id${path}`, `${path}: the id`);
  }
});

t.test('a response of another class gets the id set at once', async (t) => {
  const server = http.createServer((_req, res) => {
    tagResponse(res, 'plain');
    t.equal(res.getHeader('x-request-id'), 'plain', 'set on the response before any head');
    res.writeHead(200, { 'x-writer': 'plain' });
    res.end();
  });
  t.teardown(() => server.close());
  const h = await h1Get(await listen(server), '/');
  t.equal(h['x-request-id'], 'plain');
});

t.test('an id made here is a random version 4 UUID, a new one each time', async (t) => {
  const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const ids = Array.from({ length: 1000 }, () => newRequestId());
  t.same(
    ids.filter((id) => !UUID_V4.test(id)),
    [],
  );
  t.equal(new Set(ids).size, ids.length, 'no id twice, past a refill of the random bytes');
});
