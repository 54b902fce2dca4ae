// ChannelClient over StdioOpener against real child processes: the legacy fixture (SDK 1.32.2
// StdioServerTransport) and a hand-written server whose tools each trigger one behaviour
// (raw-stdio-server.ts). Every child started here is stopped before its test ends.

import t, { type Test } from 'tap';
import { fileURLToPath } from 'node:url';
import { CausewayError } from '../../src/errors.js';
import type { JsonRpcNotification, JsonRpcRequest } from '../../src/jsonrpc.js';
import { ChannelClient, type ChannelClientOptions } from '../../src/upstream/channel/channel-client.js';
import { ResumeRefusedError, SessionExpiredError } from '../../src/upstream/core/errors.js';
import type { SessionRef } from '../../src/upstream/core/headers.js';
import { childEnv, StdioOpener, type StdioCommand } from '../../src/upstream/channel/stdio-channel.js';
import { logSink, type LogSink } from './log-sink.js';
import { call, request, textOf } from './tool-calls.js';
import { alive } from '../helpers/processes.js';
import { until } from '../helpers/until.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));
const RAW = fileURLToPath(new URL('./raw-stdio-server.js', import.meta.url));
const INIT = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'stdio-test', version: '1' } };

/** The CausewayError `p` rejects with, checked for its reason (and message). */
async function rejectsWith(t: Test, p: Promise<unknown>, reason: string, message?: RegExp): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof CausewayError, 'a CausewayError');
  t.equal((err as CausewayError).reason, reason);
  if (message) t.match((err as Error).message, message);
}

function setup(
  t: Test,
  script: string,
  args: string[] = [],
  opts: Partial<ChannelClientOptions> = {},
  cmd: Partial<StdioCommand> = {},
): { client: ChannelClient; sink: LogSink } {
  const sink = logSink();
  const opener = new StdioOpener(
    'raw',
    {
      command: process.execPath,
      args: [script, ...args],
      env: {},
      cwd: undefined,
      maxLineBytes: 100_000,
      stopGraceMs: 300,
      ...cmd,
    },
    sink.log,
  );
  const client = new ChannelClient('raw', opener, sink.log, {
    requestTimeoutMs: 10_000,
    maxChannels: 4,
    restartBackoffMs: 10,
    ...opts,
  });
  t.teardown(() => client.destroy());
  return { client, sink };
}

const pidOf = (sink: LogSink): number[] =>
  [...sink.text().matchAll(/raw-stdio started (\d+)|serving one session on stdio \(pid (\d+)\)/g)].map((m) =>
    Number(m[1] ?? m[2]),
  );

t.test(
  'the legacy fixture over stdio: initialize, lists, 20 calls in flight at once, close stops the child',
  async (t) => {
    const { client, sink } = setup(t, FIXTURE, ['--stdio']);
    const s = await client.initialize(INIT);
    t.equal(s.protocolVersion, '2025-11-25');
    t.ok(s.sessionId, 'a local channel id');
    t.equal((s.initializeResult.serverInfo as { name: string }).name, 'causeway-legacy-fixture');
    const list = await client.request(s, request('tools/list'), {});
    t.ok('result' in list && (list.result.tools as unknown[]).length > 10);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => client.request(s, call('slow', { ms: 400 }), {})),
    );
    t.same(
      answers.map(textOf),
      Array.from({ length: 20 }, () => 'done'),
    );
    const stats = JSON.parse(textOf(await client.request(s, call('fixture_stats'), {}))) as {
      pid: number;
      slowMaxInFlight: number;
    };
    t.equal(stats.slowMaxInFlight, 20, 'answers matched by id, none waiting on another');
    t.equal(client.size, 1);
    await client.close();
    t.notOk(alive(stats.pid), 'closing the client stopped the child');
    t.ok(pidOf(sink).includes(stats.pid), 'its stderr was logged');
  },
);

t.test('pings are answered; an ask goes to the call that can ask, and its answer back to the server', async (t) => {
  const { client } = setup(t, RAW);
  const s = await client.initialize(INIT);
  t.equal(textOf(await client.request(s, call('ping_me'), {})), 'pong {}');
  const listAsks: JsonRpcRequest[] = [];
  const list = client.request(s, request('resources/list'), { onServerRequest: (r) => listAsks.push(r) });
  const asked = client.request(s, call('elicit'), {
    onServerRequest: (r) =>
      void client.respond(s, { jsonrpc: '2.0', id: r.id, result: { action: 'accept', content: { name: 'Ada' } } }),
  });
  t.equal(textOf(await asked), 'answer {"action":"accept","content":{"name":"Ada"}}');
  await list;
  t.same(listAsks, [], 'not to the list call in flight beside it');
  t.match(textOf(await client.request(s, call('elicit'), {})), /answer \{"code":-32601/, 'no call can ask: refused');
});

t.test('two calls asking at once: the second ask goes to the call not already waiting on an answer', async (t) => {
  const { client } = setup(t, RAW);
  const s = await client.initialize(INIT);
  const asks: Array<{ name: string; id: JsonRpcRequest['id'] }> = [];
  const asking = (name: string) => ({ onServerRequest: (r: JsonRpcRequest) => void asks.push({ name, id: r.id }) });
  const first = client.request(s, call('elicit'), asking('first'));
  await until(() => asks.length === 1, { what: 'the first call to ask' });
  const second = client.request(s, call('elicit'), asking('second'));
  // Neither is answered before both asked: the first is still waiting when the second asks.
  await until(() => asks.length === 2, { what: 'the second call to ask' });
  for (const { name, id } of asks)
    await client.respond(s, { jsonrpc: '2.0', id, result: { action: 'accept', content: { name } } });
  t.match(textOf(await first), /"name":"first"/);
  t.match(textOf(await second), /"name":"second"/);
});

t.test(
  'notifications: progress to its owner, logs to every call, ' +
    'list_changed to the open stream (else the oldest call)',
  async (t) => {
    const { client } = setup(t, RAW);
    const s = await client.initialize(INIT);
    const got = { a: [] as string[], b: [] as string[], stream: [] as string[] };
    const rec = (into: string[]) => ({ onNotification: (n: JsonRpcNotification) => into.push(n.method) });
    const b = client.request(s, call('wait', { ms: 300 }), rec(got.b));
    await client.request(s, call('notify', {}, 'tok-a'), rec(got.a));
    await b;
    t.same(got.a, ['notifications/progress', 'notifications/message'], 'the owner got its progress only, and the log');
    t.same(
      got.b,
      ['notifications/message', 'notifications/tools/list_changed'],
      'the oldest call got the change (no stream open)',
    );
    const holder = new AbortController();
    const opened = await client.openStream(s, rec(got.stream), holder.signal);
    t.not(opened, 'unsupported');
    got.a = [];
    await client.request(s, call('notify', {}, 'tok-b'), rec(got.a));
    t.same(got.a, ['notifications/progress', 'notifications/message']);
    t.same(got.stream, ['notifications/tools/list_changed'], 'with a stream open the change goes there only');
    holder.abort();
    if (opened !== 'unsupported') await opened.done;
  },
);

t.test(
  'a line that is not JSON-RPC is skipped; one too long breaks the channel; the session then expires',
  async (t) => {
    const { client, sink } = setup(t, RAW, [], {}, { maxLineBytes: 100_000 });
    const s = await client.initialize(INIT);
    t.equal(textOf(await client.request(s, call('garbage'), {})), 'after garbage');
    t.match(sink.text(), /no JSON-RPC message/);
    await rejectsWith(t, client.request(s, call('long_line'), {}), 'upstream_bad_response');
    await t.rejects(client.request(s, call('wait'), {}), SessionExpiredError);
    t.equal(client.size, 0);
  },
);

t.test(
  'a process that exits mid-call fails it with upstream_unavailable; the next one counts as a restart',
  async (t) => {
    let restarts = 0;
    const counts: number[] = [];
    const { client } = setup(t, RAW, [], { onRestart: () => restarts++, onChannels: (n) => counts.push(n) });
    const s = await client.initialize(INIT);
    const err = await client.request(s, call('exit'), {}).catch((e: unknown) => e);
    t.ok(
      err instanceof CausewayError && err.reason === 'upstream_unavailable' && err.status === 502,
      'upstream_unavailable, 502',
    );
    await t.rejects(client.notify(s, { jsonrpc: '2.0', method: 'notifications/cancelled' }), SessionExpiredError);
    t.equal(restarts, 0);
    const again = await client.initialize(INIT);
    t.equal(restarts, 1, 'restart counted');
    t.equal(textOf(await client.request(again, call('wait', { ms: 1 }), {})), 'waited');
    t.same(counts, [1, 0, 1]);
  },
);

t.test(
  'an id-less error answers the one call in flight; a deadline ' +
    'is upstream_timeout; resumes are refused so the caller replays',
  async (t) => {
    const { client } = setup(t, RAW);
    const s = await client.initialize(INIT);
    const r = await client.request(s, call('id_less_error'), {});
    t.same('error' in r && r.error, { code: -32000, message: 'no id' });
    await rejectsWith(
      t,
      client.request(s, call('wait', { ms: 5000 }), {}, undefined, undefined, 100),
      'upstream_timeout',
    );
    const aborted = new AbortController();
    const p = client.request(s, call('wait', { ms: 5000 }), {}, aborted.signal);
    aborted.abort(new Error('gone'));
    await t.rejects(p, /gone/, "the caller's own abort reason");
    const refused = await client.resumeCall().catch((e: unknown) => e);
    t.ok(refused instanceof ResumeRefusedError && refused.httpStatus !== 409, 'refused, not a conflict');
  },
);

t.test(
  'maxChannels: the least recently used idle channel is closed for a new one; none idle is overloaded',
  async (t) => {
    const { client, sink } = setup(t, RAW, [], { maxChannels: 2 });
    const a = await client.initialize(INIT);
    const b = await client.initialize(INIT);
    await client.request(b, call('wait', { ms: 1 }), {});
    const c = await client.initialize(INIT);
    t.equal(client.size, 2);
    await t.rejects(client.request(a, call('wait'), {}), SessionExpiredError, 'the idle, least recently used one went');
    t.equal(textOf(await client.request(b, call('wait', { ms: 1 }), {})), 'waited');
    const busyB = client.request(b, call('wait', { ms: 500 }), {});
    const busyC = client.request(c, call('wait', { ms: 500 }), {});
    await rejectsWith(t, client.initialize(INIT), 'overloaded');
    await Promise.all([busyB, busyC]);
    t.equal(pidOf(sink).length, 3, 'three processes were started, no more');
  },
);

t.test('stderr is rate-limited; a child that ignores stdin end and SIGTERM is killed', async (t) => {
  const { client, sink } = setup(t, RAW, ['--stubborn'], {}, { stderrLinesPerSecond: 10, stopGraceMs: 200 });
  const s = await client.initialize(INIT);
  await client.request(s, call('stderr_flood'), {});
  const [pid] = pidOf(sink);
  await client.terminate(s);
  t.notOk(alive(pid!), 'SIGKILL after the grace periods');
  const lines = sink.lines().filter((l) => l.msg === 'upstream stderr');
  t.ok(lines.length <= 10, `at most 10 lines logged in the first second (${lines.length})`);
  t.ok(
    sink
      .lines()
      .some((l) => l.msg === 'upstream stderr lines not logged (rate limit)' && typeof l.dropped === 'number'),
    'the rest counted',
  );
  t.match(sink.text(), /ignored SIGTERM/);
});

t.test(
  'a command that cannot start is upstream_unavailable; the ' +
    'child gets only the inherited variables and upstream.env',
  async (t) => {
    const sink = logSink();
    const opener = new StdioOpener(
      'nope',
      { command: '/nonexistent/causeway-test-binary', args: [], env: {}, cwd: undefined, maxLineBytes: 1000 },
      sink.log,
    );
    const client = new ChannelClient('nope', opener, sink.log, { requestTimeoutMs: 2000, maxChannels: 1 });
    t.teardown(() => client.destroy());
    await rejectsWith(t, client.initialize(INIT), 'upstream_unavailable', /ENOENT/);
    const env = childEnv({ EXTRA: '1' }, { PATH: '/bin', HOME: '/h', CAUSEWAY_STORE_REDIS_PASSWORD: 'secret' });
    t.same(env, { PATH: '/bin', HOME: '/h', EXTRA: '1' });
  },
);

t.test('terminate on an unknown session is a no-op; requests on it expire', async (t) => {
  const { client } = setup(t, RAW);
  const ghost: SessionRef = { sessionId: 'nope', protocolVersion: '2025-06-18' };
  await client.terminate(ghost);
  await t.rejects(client.request(ghost, call('wait'), {}), SessionExpiredError);
});
