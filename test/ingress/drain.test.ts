// Graceful drain of the real bin, phase by phase (src/ingress/drain.ts): on SIGTERM /readyz
// answers 503 at once while new work is still served for drain.delayMs; then the listener
// closes, HTTP/1.1 answers carry Connection: close and HTTP/2 sessions get GOAWAY; the work in
// flight finishes and the process exits 0 [style habit 7].

import net from 'node:net';
import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway, type RunningCauseway } from '../helpers/causeway.js';
import {
  firstText,
  MODERN_VERSION,
  modernHeaders,
  parseRawResponses,
  post,
  send,
  sleep,
  toolCall,
} from '../e2e/wire.js';
import { until } from '../helpers/until.js';
import { connectH2, h2Post, h2Request } from './h2.js';

const SLOW_MS = 800;
// Long enough that the checks made in the first phase are done well inside it on a busy machine.
const DELAY_MS = 6000;
const LISTENER_CLOSED = '"msg":"listener closed';

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
  'error ECONNREFUSED',
  // An h2 session the server has sent GOAWAY on refuses new streams locally.
  'error ERR_HTTP2_GOAWAY_SESSION',
  'error ERR_HTTP2_INVALID_SESSION',
  'error ERR_HTTP2_STREAM_CANCEL',
]);

/** Resolves true once `causeway` logged a line with `text`. */
function logged(causeway: RunningCauseway, text: string, timeoutMs?: number): Promise<boolean> {
  return until(() => causeway.logs.some((l) => l.includes(text)), { what: `a log line with ${text}`, timeoutMs });
}

t.test('modern_client-to-causeway-sigterm-drains-in-phases', async (t) => {
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const causeway = await spawnCauseway(
    { 'upstream.url': upstream.url, 'drain.delayMs': DELAY_MS, 'drain.timeoutMs': 5000 },
    { t },
  );
  t.teardown(() => causeway.close());
  const path = new URL(causeway.url).pathname;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    causeway.child.once('exit', (code, signal) => resolve({ code, signal })),
  );

  const warm = toolCall('echo', { text: 'warm' }, 'warm');
  t.equal(firstText(await post(causeway.url, warm.body, warm.headers)), 'warm');
  // An h2c connection opened before the drain, to try new streams on it once the listener is closed.
  const { session: early } = await connectH2(`http://127.0.0.1:${causeway.port}`);
  early.on('error', () => undefined);
  t.teardown(() => early.destroy());
  t.equal(
    (await h2Request(early, { ':method': 'GET', ':path': '/readyz' })).status,
    200,
    '/readyz 200 before the drain',
  );

  causeway.child.kill('SIGTERM');
  t.ok(await logged(causeway, '"msg":"draining"'), 'the process logged that it is draining');

  // Phase 1: not ready, but serving, on new connections too.
  t.equal((await send(causeway.url, { method: 'GET', path: '/readyz' })).status, 503, '/readyz: 503 at once');
  t.equal(
    (await send(causeway.adminUrl!, { method: 'GET', path: '/readyz' })).status,
    503,
    'admin /readyz: 503 at once',
  );
  const during = toolCall('echo', { text: 'still served' }, 'during-delay');
  const served = await post(causeway.url, during.body, during.headers);
  t.equal(served.status, 200, 'a request on a new connection during drain.delayMs is served');
  t.equal(firstText(served), 'still served');
  t.equal(
    (await h2Request(early, { ':method': 'GET', ':path': '/healthz' })).status,
    200,
    'the open h2 session still takes streams',
  );
  t.notOk(
    causeway.logs.some((l) => l.includes(LISTENER_CLOSED)),
    `all of the above within drain.delayMs (${DELAY_MS} ms)`,
  );

  // A slow call started in phase 1 is in flight when the listener closes.
  const slow = toolCall('slow', { ms: SLOW_MS + DELAY_MS }, 'in-flight');
  const inFlight = post(causeway.url, slow.body, slow.headers, { timeoutMs: 30_000 });

  // Phase 2: the listener is closed; the open h2 session has GOAWAY.
  t.ok(await logged(causeway, LISTENER_CLOSED, DELAY_MS + 30_000), 'the listener closed after the delay');
  const fresh = toolCall('echo', { text: 'too late' }, 'late');
  const newConnection = await outcome(post(causeway.url, fresh.body, fresh.headers, { timeoutMs: 2000 }));
  const onEarly = await outcome(h2Post(early, path, fresh.headers, fresh.body));
  t.comment(`after the delay: new connection -> ${newConnection}; new h2 stream on an open session -> ${onEarly}`);
  t.ok(TURNED_AWAY.has(newConnection), `a new connection is refused (${newConnection})`);
  t.ok(TURNED_AWAY.has(onEarly), `a new stream on an open h2 session is refused (${onEarly})`);

  const done = await inFlight;
  t.equal(done.status, 200, 'the in-flight call completed');
  t.equal(firstText(done), 'done');
  const exit = await exited;
  t.equal(exit.code, 0, 'exit code 0');
  t.equal(exit.signal, null, 'exited by itself, not killed');
  t.equal(upstream.stats().toolCalls.echo, 2, 'the request refused after the delay never reached the upstream');
  t.equal(upstream.stats().cancelled, 0, 'the in-flight call was not cancelled');
});

t.test('modern_client-to-causeway-sigterm-keep-alive-connection-served-then-closed', async (t) => {
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const causeway = await spawnCauseway({ 'upstream.url': upstream.url, 'drain.timeoutMs': 5000 }, { t });
  t.teardown(() => causeway.close());
  const exited = new Promise<number | null>((resolve) => causeway.child.once('exit', (code) => resolve(code)));
  const warm = toolCall('echo', { text: 'warm' }, 'warm');
  t.equal(firstText(await post(causeway.url, warm.body, warm.headers)), 'warm');

  // One keep-alive HTTP/1.1 connection: the slow call, then (once the listener is closed) a
  // /readyz and a call pipelined behind it. They are answered, and the last answer closes.
  const socket = net.connect(causeway.port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  let received = '';
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', () => undefined);
  const slow = JSON.stringify(toolCall('slow', { ms: SLOW_MS }, 'kept-alive').body);
  const host = `Host: 127.0.0.1:${causeway.port}`;
  const call = (name: string, body: string) => [
    'POST /mcp HTTP/1.1',
    host,
    'Content-Type: application/json',
    'Accept: application/json, text/event-stream',
    `MCP-Protocol-Version: ${MODERN_VERSION}`,
    'Mcp-Method: tools/call',
    `Mcp-Name: ${name}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ];
  socket.write(call('slow', slow).join('\r\n'));
  await until(() => (upstream.stats().toolCalls['slow'] ?? 0) > 0, { what: 'the slow call upstream' });
  causeway.child.kill('SIGTERM');
  t.ok(await logged(causeway, LISTENER_CLOSED), 'the listener closed (drain.delayMs is 0 here)');
  const late = JSON.stringify(toolCall('echo', { text: 'on the open connection' }, 'late').body);
  socket.write(['GET /readyz HTTP/1.1', host, '', ...call('echo', late)].join('\r\n'));
  await Promise.race([closed, sleep(5000)]);
  const responses = parseRawResponses(received);
  t.comment(
    `on the kept-alive ` +
      `connection: ${responses.map((r) => `${r.status} ${r.headers.connection ?? ''} ${r.body}`).join(' | ')}`,
  );
  t.equal(responses.length, 3, 'three answers on the one connection');
  t.equal(responses[0]?.status, 200, 'the in-flight call completed on its connection');
  t.match(responses[0]?.body, /"text":"done"/, 'with its result');
  t.equal(responses[1]?.status, 503, '/readyz during the drain: 503');
  t.equal(responses[2]?.status, 200, 'a request on a connection that is still open is served');
  t.match(responses[2]?.body, /"text":"on the open connection"/);
  t.equal(responses[2]?.headers.connection, 'close', 'and told to take the next one elsewhere');
  t.equal(upstream.stats().toolCalls.echo, 2, 'warm-up and the late call reached the upstream');
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
  t.comment(`exited ${Date.now() - started} ms after SIGTERM`);
});
