// Graceful drain of the real bin: on SIGTERM the in-flight call still completes, new work is
// turned away (503 on a connection that is still open, or refused once the listener is closed),
// and the process exits 0 [style habit 7].

import net from 'node:net';
import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway } from '../helpers/causeway.js';
import { firstText, MODERN_VERSION, modernHeaders, parseRawResponses, post, send, sleep, toolCall } from '../e2e/wire.js';
import { connectH2, h2Post, h2Request } from './h2.js';

const SLOW_MS = 800;

/** What a new piece of work met during the drain. */
async function outcome(p: Promise<{ status: number }>): Promise<string> {
  try {
    return `status ${(await p).status}`;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return `error ${code ?? (err as Error).message}`;
  }
}

const TURNED_AWAY = new Set([
  'status 503',
  'error ECONNREFUSED',
  // An h2 session the server has sent GOAWAY on refuses new streams locally.
  'error ERR_HTTP2_GOAWAY_SESSION',
  'error ERR_HTTP2_INVALID_SESSION',
  'error ERR_HTTP2_STREAM_CANCEL',
]);

t.test('modern_client-to-causeway-sigterm-drains', async (t) => {
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const causeway = await spawnCauseway({ 'upstream.url': upstream.url, 'drain.timeoutMs': 5000 }, { t });
  t.teardown(() => causeway.close());
  const path = new URL(causeway.url).pathname;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    causeway.child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );

  // Warm: the upstream session exists, so the slow call's time is the tool's.
  const warm = toolCall('echo', { text: 'warm' }, 'warm');
  t.equal(firstText(await post(causeway.url, warm.body, warm.headers)), 'warm');
  // An h2c connection opened before the drain, to try new streams on it during the drain.
  const { session: early } = await connectH2(`http://127.0.0.1:${causeway.port}`);
  early.on('error', () => undefined);
  t.teardown(() => early.destroy());
  t.equal((await h2Request(early, { ':method': 'GET', ':path': '/readyz' })).status, 200, '/readyz 200 before the drain');

  const slow = toolCall('slow', { ms: SLOW_MS }, 'in-flight');
  const started = Date.now();
  const inFlight = post(causeway.url, slow.body, slow.headers, { timeoutMs: 10_000 });
  await sleep(150);
  causeway.child.kill('SIGTERM');
  for (let i = 0; i < 40 && !causeway.logs.some((l) => l.includes('"msg":"draining"')); i++) await sleep(25);
  t.ok(causeway.logs.some((l) => l.includes('"msg":"draining"')), 'the process logged that it is draining');

  const readyz = await outcome(send(causeway.url, { method: 'GET', path: '/readyz', timeoutMs: 2000 }));
  const fresh = toolCall('echo', { text: 'too late' }, 'late');
  const newRequest = await outcome(post(causeway.url, fresh.body, fresh.headers, { timeoutMs: 2000 }));
  const onEarly = await outcome(h2Post(early, path, fresh.headers, fresh.body));
  t.comment(`during the drain: new /readyz -> ${readyz}; new request -> ${newRequest}; new h2 stream on an open session -> ${onEarly}`);
  t.ok(TURNED_AWAY.has(readyz), `/readyz during the drain: 503 or refused (${readyz})`);
  t.ok(TURNED_AWAY.has(newRequest), `a new request during the drain: 503 or refused (${newRequest})`);
  t.ok(TURNED_AWAY.has(onEarly), `a new stream on an open h2 session: 503 or refused (${onEarly})`);

  const done = await inFlight;
  t.equal(done.status, 200, 'the in-flight call completed');
  t.equal(firstText(done), 'done');
  t.ok(Date.now() - started >= SLOW_MS - 50, 'after the tool really ran');

  const exit = await exited;
  t.equal(exit.code, 0, 'exit code 0');
  t.equal(exit.signal, null, 'exited by itself, not killed');
  t.ok(exit.at - started < SLOW_MS + 3000, `exited soon after the in-flight call (${exit.at - started} ms)`);
  t.equal(upstream.stats().toolCalls.echo, 1, 'the request turned away never reached the upstream');
  t.equal(upstream.stats().cancelled, 0, 'the in-flight call was not cancelled');
});

t.test('modern_client-to-causeway-sigterm-keep-alive-connection-gets-503', async (t) => {
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const causeway = await spawnCauseway({ 'upstream.url': upstream.url, 'drain.timeoutMs': 5000 }, { t });
  t.teardown(() => causeway.close());
  const exited = new Promise<number | null>((resolve) => causeway.child.once('exit', (code) => resolve(code)));
  const warm = toolCall('echo', { text: 'warm' }, 'warm');
  t.equal(firstText(await post(causeway.url, warm.body, warm.headers)), 'warm');

  // One keep-alive HTTP/1.1 connection: the slow call, then (during the drain) a /readyz
  // pipelined behind it. The connection is busy, so the drain does not close it under the call.
  const socket = net.connect(causeway.port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  let received = '';
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', () => undefined);
  const slow = JSON.stringify(toolCall('slow', { ms: SLOW_MS }, 'kept-alive').body);
  const host = `Host: 127.0.0.1:${causeway.port}`;
  socket.write(
    [
      'POST /mcp HTTP/1.1', host, 'Content-Type: application/json', 'Accept: application/json, text/event-stream',
      `MCP-Protocol-Version: ${MODERN_VERSION}`, 'Mcp-Method: tools/call', 'Mcp-Name: slow',
      `Content-Length: ${Buffer.byteLength(slow)}`, '', slow,
    ].join('\r\n'),
  );
  await sleep(150);
  causeway.child.kill('SIGTERM');
  for (let i = 0; i < 40 && !causeway.logs.some((l) => l.includes('"msg":"draining"')); i++) await sleep(25);
  const late = JSON.stringify(toolCall('echo', { text: 'too late' }, 'late').body);
  socket.write(
    [
      'GET /readyz HTTP/1.1', host, '',
      'POST /mcp HTTP/1.1', host, 'Content-Type: application/json', 'Accept: application/json, text/event-stream',
      `MCP-Protocol-Version: ${MODERN_VERSION}`, 'Mcp-Method: tools/call', 'Mcp-Name: echo',
      `Content-Length: ${Buffer.byteLength(late)}`, '', late,
    ].join('\r\n'),
  );
  await Promise.race([closed, sleep(5000)]);
  const responses = parseRawResponses(received);
  t.comment(`on the kept-alive connection: ${responses.map((r) => `${r.status} ${r.body}`).join(' | ')}`);
  t.equal(responses.length, 3, 'three answers on the one connection');
  t.equal(responses[0]?.status, 200, 'the in-flight call completed on its connection');
  t.match(responses[0]?.body, /"text":"done"/, 'with its result');
  t.equal(responses[1]?.status, 503, '/readyz asked during the drain: 503');
  t.equal(responses[2]?.status, 503, 'a new request during the drain: 503');
  t.equal(JSON.parse(responses[2]?.body ?? '{}').error?.code, -32603, 'our own failure: -32603, never blamed on the client');
  t.equal(upstream.stats().toolCalls.echo, 1, 'the request turned away never reached the upstream');
  t.equal(await exited, 0, 'exit code 0');
});

t.test('modern_client-to-causeway-sigterm-when-idle-exits-at-once', async (t) => {
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const causeway = await spawnCauseway({ 'upstream.url': upstream.url }, { t });
  t.teardown(() => causeway.close());
  const hello = toolCall('echo', { text: 'hi' }, 1);
  t.equal(firstText(await post(causeway.url, hello.body, modernHeaders('tools/call', 'echo'))), 'hi');
  const started = Date.now();
  const exited = new Promise<number | null>((resolve) => causeway.child.once('exit', (code) => resolve(code)));
  causeway.child.kill('SIGTERM');
  t.equal(await exited, 0, 'exit code 0');
  t.ok(Date.now() - started < 2000, `no in-flight work: quick exit (${Date.now() - started} ms)`);
});
