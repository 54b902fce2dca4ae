// A rolling restart loses nothing: two Causeway replicas sharing Redis behind a real nginx, 16
// clients making modern calls and multi-round calls through it and one listening, and one
// replica SIGTERMed mid-load. Every call succeeds, every multi-round call completes with its tool
// run once, and the listen client, whose stream ends with the drain, listens again through
// nginx and gets every change made after that.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { spawnCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { startNginx } from '../helpers/nginx.js';
import { exitOf } from '../helpers/processes.js';
import { startRedis } from '../helpers/redis.js';
import { SseReader } from '../helpers/sse.js';
import { spawnFixture } from './upstreams.js';
import { META_CAPABILITIES, modernBody, modernHeaders, type JsonObject } from './wire.js';
import { until } from '../helpers/until.js';

const CALLERS = 12;
const MULTI_ROUND_CALLERS = 4;
const MULTI_ROUND = 'test_input_required_result_multi_round';
const MAX_ITERATIONS = 2_000;
const CALL_TIMEOUT_MS = 30_000;

const redis = await startRedis(t);
const upstream = await spawnFixture(0, { t });
const settings = {
  'upstream.url': upstream.url,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
  'subscriptions.keepAliveMs': 500,
  // Long enough for nginx to send this replica work during the delay, short for the test.
  'drain.delayMs': 1500,
  'drain.timeoutMs': 5000,
  'log.level': 'info',
};
const replicas: RunningCauseway[] = [];
for (let i = 0; i < 2; i++) replicas.push(await spawnCauseway(settings, { t }));
const [a, b] = replicas as [RunningCauseway & { child: import('node:child_process').ChildProcess }, RunningCauseway];

// What the gateway overlay's load balancer does: round robin, upstream keep-alive, no affinity.
const nginx = await startNginx(
  t,
  (port) => `
upstream causeway {
    server 127.0.0.1:${a.port};
    server 127.0.0.1:${b.port};
    keepalive 32;
    keepalive_timeout 60s;
}
server {
    listen 127.0.0.1:${port};
    location / {
        proxy_pass http://causeway;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_buffering off;
        proxy_read_timeout 1h;
    }
}
`,
);
const MCP = `http://127.0.0.1:${nginx.port}/mcp`;
const dispatcher = new Agent({ connections: 64 });
t.teardown(() => dispatcher.close());

interface Reply {
  status: number;
  result?: { resultType?: string; requestState?: string; content?: Array<{ text?: string }> };
  error?: { code: number; message: string };
}

let nextId = 1;
const ASKING = { elicitation: { form: {} } };

async function call(
  name: string,
  args: JsonObject = {},
  extra: JsonObject = {},
  capabilities: JsonObject = ASKING,
): Promise<Reply> {
  const res = await fetch(MCP, {
    method: 'POST',
    headers: modernHeaders('tools/call', name),
    body: JSON.stringify(
      modernBody('tools/call', { name, arguments: args, ...extra } as JsonObject, nextId++, {
        [META_CAPABILITIES]: capabilities,
      }),
    ),
    // A call that hangs is a failure, not a stuck test.
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    dispatcher,
  });
  const text = await res.text();
  try {
    return { status: res.status, ...(JSON.parse(text) as Omit<Reply, 'status'>) };
  } catch {
    return { status: res.status, error: { code: 0, message: `not JSON: ${text.slice(0, 200)}` } };
  }
}

/** The value of an unlabelled gauge on a replica's admin port. */
async function gauge(c: RunningCauseway, name: string): Promise<number> {
  const text = await (await fetch(`${c.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

/** The three rounds of the fixture's multi-round tool; what went wrong, or undefined. */
async function multiRound(who: string): Promise<string | undefined> {
  const round = (n: number, extra: JsonObject) =>
    call(MULTI_ROUND, {}, extra).catch(
      (err: Error) =>
        ({
          status: 0,
          error: { code: 0, message: `round ${n} at ${new Date().toISOString()}: ${err.message}` },
        }) as Reply,
    );
  const r1 = await round(1, {});
  if (r1.result?.resultType !== 'input_required') return `round 1: ${JSON.stringify(r1)}`;
  const r2 = await round(2, {
    inputResponses: { step1: { action: 'accept', content: { name: who } } },
    requestState: r1.result.requestState!,
  });
  if (r2.result?.resultType !== 'input_required') return `round 2: ${JSON.stringify(r2)}`;
  const r3 = await round(3, {
    inputResponses: { step2: { action: 'accept', content: { color: 'blue' } } },
    requestState: r2.result.requestState!,
  });
  const text = r3.result?.content?.[0]?.text;
  return text === `Multi-round complete for ${who} who likes blue` ? undefined : `round 3: ${JSON.stringify(r3)}`;
}

/**
 * A listen through nginx for tools/list_changed. A replica that is draining answers a new listen
 * 503 (it is about to end its streams); like any client, this one tries again.
 */
async function listen(id: string): Promise<{ reader: SseReader; abort: AbortController }> {
  // Only the 503 is tried again: anything else ends the wait with its error.
  const got = await until(
    () =>
      listenOnce(id).then(
        (opened) => ({ opened }),
        (err: unknown) => (err instanceof Error && err.message.startsWith('listen answered 503') ? undefined : { err }),
      ),
    { what: `listen ${id} to be taken`, everyMs: 100 },
  );
  if ('err' in got) throw got.err;
  return got.opened;
}

async function listenOnce(id: string): Promise<{ reader: SseReader; abort: AbortController }> {
  const abort = new AbortController();
  const res = await fetch(MCP, {
    method: 'POST',
    headers: modernHeaders('subscriptions/listen'),
    body: JSON.stringify(
      modernBody('subscriptions/listen', { notifications: { toolsListChanged: true } } as JsonObject, id),
    ),
    signal: abort.signal,
    dispatcher,
  });
  if (res.status !== 200) throw new Error(`listen answered ${res.status}: ${await res.text()}`);
  const reader = new SseReader(res.body as ReadableStream<Uint8Array>, { endOnError: true });
  const ack = await reader.nextMessage();
  if (ack?.method !== 'notifications/subscriptions/acknowledged') throw new Error(`no ack: ${JSON.stringify(ack)}`);
  return { reader, abort };
}

t.test('modern_client-to-nginx-to-two-replicas-sigterm-one-mid-load-loses-nothing', async (t) => {
  const failures: string[] = [];
  let calls = 0;
  let multiRounds = 0;
  let stop = false;
  const toolRunsBefore = (await upstream.stats()).toolCalls[MULTI_ROUND] ?? 0;

  // The listener: re-listens whenever its stream ends; counts the changes it hears.
  let heard = 0;
  const seen: string[] = [];
  const t0 = Date.now();
  let relistens = 0;
  let listening = await listen('rolling-0');
  t.teardown(() => listening.abort.abort());
  let listenerDone = false;
  const listener = (async () => {
    while (!listenerDone) {
      const m = await listening.reader.nextMessage();
      if (m === undefined) {
        if (listenerDone) return;
        relistens++;
        listening = await listen(`rolling-${relistens}`);
      } else {
        seen.push(`${Date.now() - t0} ${relistens} ${m.method ?? JSON.stringify(m).slice(0, 80)}`);
        if (m.method === 'notifications/tools/list_changed') heard++;
      }
    }
  })();

  const caller = async (i: number) => {
    for (let n = 0; n < MAX_ITERATIONS && !stop; n++) {
      try {
        const r = await call('echo', { text: `c${i}-${n}` });
        if (r.result?.content?.[0]?.text !== `c${i}-${n}`)
          failures.push(`echo c${i}-${n}: ${r.status} ${JSON.stringify(r.error ?? r.result)}`);
      } catch (err) {
        failures.push(`echo c${i}-${n}: ${(err as Error).message}`);
      }
      calls++;
    }
  };
  const multiRoundCaller = async (i: number) => {
    for (let n = 0; n < MAX_ITERATIONS && !stop; n++) {
      try {
        const wrong = await multiRound(`m${i}-${n}`);
        if (wrong) failures.push(`multi-round m${i}-${n}: ${wrong}`);
      } catch (err) {
        failures.push(`multi-round m${i}-${n}: ${(err as Error).message}`);
      }
      multiRounds++;
    }
  };
  const load = [
    ...Array.from({ length: CALLERS }, (_, i) => caller(i)),
    ...Array.from({ length: MULTI_ROUND_CALLERS }, (_, i) => multiRoundCaller(i)),
  ];

  // Both replicas serve before the restart.
  // Bounded, not asserted: a load that never got going shows in the counts below.
  await until(() => calls >= 100, { what: '100 calls', everyMs: 25 }).catch(() => undefined);
  const listenedOnA = (await gauge(a, 'causeway_listen_streams')) > 0;
  const exited = exitOf(a.child);
  a.child.kill('SIGTERM');
  const exit = await exited;
  const atExit = { calls, multiRounds };
  // Load goes on a little on the remaining replica, then stops.
  await until(() => calls >= atExit.calls + 100, { what: '100 calls after the exit', everyMs: 25 }).catch(
    () => undefined,
  );
  stop = true;
  await Promise.all(load);

  // Every change made after the drain reaches the listener, wherever it listens now. One at a
  // time: the upstream may fold list changes sent close together into one notification.
  let reached = 0;
  for (let i = 0; i < 3; i++) {
    const heardBefore = heard;
    // No capabilities, as the listen declared none: the same pooled session.
    const r = await call('test_trigger_tool_change', {}, {}, {});
    if (r.status !== 200) failures.push(`trigger: ${r.status}`);
    await until(() => heard > heardBefore, { what: 'the change to reach the listener', everyMs: 25 }).catch(
      () => undefined,
    );
    if (heard > heardBefore) reached++;
    seen.push(`${Date.now() - t0} trigger ${i} answered ${r.status}`);
  }
  listenerDone = true;
  listening.abort.abort();
  await listener.catch(() => undefined);

  const toolRuns = ((await upstream.stats()).toolCalls[MULTI_ROUND] ?? 0) - toolRunsBefore;
  t.comment(
    `${calls} calls and ${multiRounds} multi-round calls; ${atExit.calls} ` +
      `/ ${atExit.multiRounds} by the time A exited; ` +
      `the listener listened again ${relistens} time(s); ${failures.length} failure(s)`,
  );
  if (failures.length > 0) {
    t.comment(`nginx error.log:\n${readFileSync(join(nginx.dir, 'error.log'), 'utf8')}`);
    const quiet = (logs: string[]) => logs.filter((l) => !l.includes('"level":30')).join('\n');
    t.comment(`A logged:\n${quiet(a.logs)}\nB logged:\n${quiet(b.logs)}`);
  }
  t.equal(exit.code, 0, 'the drained replica exited 0');
  t.same(failures.slice(0, 10), [], 'no request failed');
  t.ok(calls > atExit.calls, 'calls went on after the drained replica exited');
  t.equal(toolRuns, multiRounds, 'each multi-round call ran its tool once: none lost, none replayed');
  if (listenedOnA)
    t.ok(relistens >= 1, 'the listen stream on the drained replica ended, and the client listened again');
  else t.comment('the listen stream was on the other replica');
  if (reached !== 3)
    t.comment(
      `the listener saw:\n${seen.join('\n')}\nB ` +
        `logged:\n${b.logs.filter((l) => !l.includes('"level":30')).join('\n')}`,
    );
  t.equal(reached, 3, 'the listener got every change made after the drain');
});
