// The data port speaks HTTP/1.1 and h2c (prior knowledge) on one cleartext port, and h2 or
// http/1.1 by ALPN when given a certificate. Each answers a modern request the same way, the
// HTTP/2 SETTINGS advertise limits.maxConcurrentStreams, and /healthz, /readyz answer 200.

import https from 'node:https';
import net from 'node:net';
import tls, { type TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway, type Settings } from '../helpers/causeway.js';
import { firstText, modernHeaders, post, send, toolCall, type WireResponse } from '../e2e/wire.js';
import { connectH2, h2Post, h2Request, selfSignedCert, type H2Response } from './h2.js';

const MAX_STREAMS = 7;
const MAX_HEADER = 12_288;
const MAX_BODY = 65_536;

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());

/** A Causeway serving TLS with a certificate made for the test; undefined (and a failure) without openssl. */
async function tlsCauseway(t: Test, settings: Settings) {
  const cert = selfSignedCert();
  if (!cert) {
    t.fail('openssl is not available: cannot make a test certificate');
    return undefined;
  }
  t.teardown(() => cert.cleanup());
  const causeway = await startCauseway({
    'upstream.url': upstream.url,
    'listen.tlsCertFile': cert.certFile,
    'listen.tlsKeyFile': cert.keyFile,
    ...settings,
  });
  t.teardown(() => causeway.close());
  return { cert, causeway };
}

function assertEcho(t: Test, res: WireResponse | H2Response, id: string, text: string) {
  t.equal(res.status, 200, 'HTTP 200');
  t.match(String(res.headers['content-type']), /^application\/json/, 'a JSON answer');
  t.equal(res.json?.id, id, 'id echoed');
  t.equal(res.json?.result?.resultType, 'complete');
  t.same(res.json?.result?.content, [{ type: 'text', text }]);
  t.match(String(res.headers['x-request-id']), UUID, 'the request id Causeway made, on this protocol too');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('cleartext: HTTP/1.1 and h2c on one port', async (t) => {
  const causeway = await startCauseway({
    'upstream.url': upstream.url,
    'limits.maxConcurrentStreams': MAX_STREAMS,
    'limits.maxHeaderBytes': MAX_HEADER,
    'limits.maxBodyBytes': MAX_BODY,
  });
  t.teardown(() => causeway.close());
  const path = new URL(causeway.url).pathname;

  t.test('http1_client-to-legacy_upstream-tools-call', async (t) => {
    const { body, headers } = toolCall('echo', { text: 'over h1' }, 'h1');
    assertEcho(t, await post(causeway.url, body, headers), 'h1', 'over h1');
  });

  t.test('h2c_client-to-legacy_upstream-tools-call', async (t) => {
    const { session, settings } = await connectH2(`http://127.0.0.1:${causeway.port}`);
    t.teardown(() => session.close());
    t.equal(session.alpnProtocol, 'h2c', 'prior-knowledge h2c');
    const s = await settings;
    t.equal(s.maxConcurrentStreams, MAX_STREAMS, 'SETTINGS_MAX_CONCURRENT_STREAMS is limits.maxConcurrentStreams');
    t.equal(s.maxHeaderListSize, MAX_HEADER, 'SETTINGS_MAX_HEADER_LIST_SIZE is limits.maxHeaderBytes');
    const { body, headers } = toolCall('echo', { text: 'over h2c' }, 'h2c');
    assertEcho(t, await h2Post(session, path, headers, body), 'h2c', 'over h2c');
    // Several streams at once on the one connection, each answered on its own.
    const many = await Promise.all(
      ['a', 'b', 'c', 'd'].map((x) => {
        const r = toolCall('echo', { text: x }, `h2c-${x}`);
        return h2Post(session, path, r.headers, r.body);
      }),
    );
    t.same(
      many.map((r) => firstText(r)),
      ['a', 'b', 'c', 'd'],
      'concurrent streams',
    );
    const rejected = await h2Post(session, path, { ...headers, 'mcp-method': 'tools/list' }, body);
    t.equal(rejected.status, 400, 'envelope errors over h2 too');
    t.equal(rejected.json?.error?.code, -32020);
    t.equal(rejected.json?.id, 'h2c');
    t.match(String(rejected.headers['x-request-id']), UUID, 'an error answer carries a request id too');
    const named = await h2Post(session, path, { ...headers, 'x-request-id': 'h2c-request' }, body);
    t.equal(named.headers['x-request-id'], 'h2c-request', "the client's x-request-id echoed over h2c");
  });

  t.test('ops endpoints over h1 and h2c', async (t) => {
    for (const p of ['/healthz', '/readyz']) {
      const r = await send(causeway.url, { method: 'GET', path: p });
      t.equal(r.status, 200, `h1 GET ${p}`);
    }
    const { session } = await connectH2(`http://127.0.0.1:${causeway.port}`);
    t.teardown(() => session.close());
    for (const p of ['/healthz', '/readyz']) {
      const r = await h2Request(session, { ':method': 'GET', ':path': p });
      t.equal(r.status, 200, `h2c GET ${p}`);
    }
  });

  // After its 413 the stream is reset (NO_ERROR, RFC 9113 §8.1): the client cannot go on
  // pushing the refused body. Regression for the front door reading refused bodies unbounded.
  t.test('h2c_client-body-over-limit-stream-reset', async (t) => {
    const { session } = await connectH2(`http://127.0.0.1:${causeway.port}`);
    t.teardown(() => session.destroy());
    const stream = session.request({ ':method': 'POST', ':path': path, ...modernHeaders('tools/call', 'echo') });
    stream.on('error', () => undefined);
    let status = 0;
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.resume();
    const piece = Buffer.alloc(16 * 1024, 0x78);
    // Pushes until the server resets the stream, or until far more than the limit went out: the
    // failure, whatever the machine's speed. (A server that stops reading without a reset stalls
    // the push on flow control, and the test times out.)
    const cap = 16 * MAX_BODY;
    let sent = 0;
    const started = Date.now();
    // stream.closed turns true on the server's RST_STREAM; 'close' itself waits for the session.
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (stream.closed || sent >= cap) {
          clearInterval(check);
          resolve();
        }
      }, 20);
      const pump = () => {
        while (!stream.closed && !stream.destroyed && sent < cap) {
          sent += piece.length;
          if (!stream.write(piece)) return void stream.once('drain', pump);
        }
      };
      pump();
    });
    t.equal(status, 413, '413 over h2');
    t.ok(stream.closed, 'the stream was closed by the server');
    t.ok(sent < cap, `the client could not push the refused body on (${sent} bytes)`);
    t.comment(`stream reset ${Date.now() - started} ms after the request`);
  });

  t.test('h2c_client-header-block-over-limit', async (t) => {
    const { session } = await connectH2(`http://127.0.0.1:${causeway.port}`);
    t.teardown(() => session.destroy());
    session.on('error', () => undefined);
    const { body, headers } = toolCall('echo', { text: 'x' }, 'big-h2');
    const outcome = await h2Post(session, path, { ...headers, 'x-padding': 'p'.repeat(MAX_HEADER * 2) }, body).then(
      (r) => `status ${r.status}`,
      (err: NodeJS.ErrnoException) => `stream error ${err.code}`,
    );
    t.comment(`oversized h2 header block: ${outcome}`);
    t.ok(outcome === 'status 431' || outcome.startsWith('stream error'), 'refused: 431 or the stream reset');
    const after = await post(causeway.url, toolCall('echo', { text: 'up' }).body, modernHeaders('tools/call', 'echo'));
    t.equal(firstText(after), 'up', 'the server is still up');
  });
});

t.test('TLS with ALPN h2 and http/1.1', async (t) => {
  const served = await tlsCauseway(t, { 'limits.maxConcurrentStreams': MAX_STREAMS });
  if (!served) return;
  const { cert, causeway } = served;
  t.match(causeway.url, /^https:\/\/127\.0\.0\.1:\d+\/mcp$/, 'an https URL');
  const path = new URL(causeway.url).pathname;

  t.test('h2_tls_client-to-legacy_upstream-tools-call', async (t) => {
    const { session, settings } = await connectH2(`https://127.0.0.1:${causeway.port}`, { ca: cert.cert });
    t.teardown(() => session.close());
    t.equal(session.alpnProtocol, 'h2', 'ALPN chose h2');
    t.equal((await settings).maxConcurrentStreams, MAX_STREAMS, 'SETTINGS_MAX_CONCURRENT_STREAMS over TLS');
    const { body, headers } = toolCall('echo', { text: 'over h2 tls' }, 'h2-tls');
    assertEcho(t, await h2Post(session, path, headers, body), 'h2-tls', 'over h2 tls');
    t.equal((await h2Request(session, { ':method': 'GET', ':path': '/readyz' })).status, 200, '/readyz over h2 tls');
  });

  t.test('http1_tls_client-to-legacy_upstream-tools-call', async (t) => {
    const { body, headers } = toolCall('echo', { text: 'over h1 tls' }, 'h1-tls');
    const text = JSON.stringify(body);
    const { res, alpn } = await new Promise<{ res: H2Response; alpn: string | false | null }>((resolve, reject) => {
      // https.RequestOptions lacks ALPNProtocols, but it is handed to tls.connect as is.
      const options: https.RequestOptions & { ALPNProtocols: string[] } = {
        host: '127.0.0.1',
        port: causeway.port,
        path,
        method: 'POST',
        ca: cert.cert,
        ALPNProtocols: ['http/1.1'],
        agent: false,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(text)) },
      };
      const req = https.request(options, (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => {
          const s = Buffer.concat(chunks).toString('utf8');
          resolve({
            res: { status: r.statusCode ?? 0, headers: r.headers, text: s, json: JSON.parse(s) },
            alpn: (r.socket as TLSSocket).alpnProtocol,
          });
        });
      });
      req.on('error', reject);
      req.end(text);
    });
    t.equal(alpn, 'http/1.1', 'ALPN chose http/1.1');
    assertEcho(t, res, 'h1-tls', 'over h1 tls');
  });

  t.test('https without ALPN falls back to HTTP/1.1', async (t) => {
    const r = await new Promise<number>((resolve, reject) => {
      https
        .get({ host: '127.0.0.1', port: causeway.port, path: '/healthz', ca: cert.cert, agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
        .on('error', reject);
    });
    t.equal(r, 200, '/healthz over https');
  });
});

t.test('TLS connections are bounded too: no handshake, no head, no first h2 stream in time', async (t) => {
  const served = await tlsCauseway(t, { 'limits.headersTimeoutMs': 1_000 });
  if (!served) return;
  const { cert, causeway } = served;
  const closed = (s: net.Socket) => new Promise<void>((r) => s.once('close', () => r()));
  const sockets: net.Socket[] = [];
  t.teardown(() => sockets.forEach((s) => s.destroy()));

  const bare = net.connect(causeway.port, '127.0.0.1');
  const h1 = tls.connect({
    host: '127.0.0.1',
    port: causeway.port,
    ca: cert.cert,
    ALPNProtocols: ['http/1.1'],
    servername: 'localhost',
  });
  h1.once('secureConnect', () => h1.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n'));
  const h2 = tls.connect({
    host: '127.0.0.1',
    port: causeway.port,
    ca: cert.cert,
    ALPNProtocols: ['h2'],
    servername: 'localhost',
  });
  for (const s of [bare, h1, h2]) {
    s.on('error', () => undefined);
    // Read whatever the server sends (a 408, a GOAWAY), or its closing is never seen.
    s.resume();
    sockets.push(s);
  }
  // No speed is asserted: each must simply be closed by the server, not left open.
  await Promise.all([closed(bare), closed(h1), closed(h2)]);
  t.pass(
    'a socket that never starts TLS, a TLS HTTP/1.1 head never ' +
      'finished and a TLS h2 session with no stream are all closed',
  );
  const metrics = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  const count = Number(/causeway_connections_closed_total\{reason="headers_timeout"\} (\d+)/.exec(metrics)?.[1] ?? 0);
  t.equal(count, 3, 'each counted as a headers_timeout');
});
