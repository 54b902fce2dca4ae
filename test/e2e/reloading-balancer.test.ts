// A rolling update behind a balancer that reloads, as an ingress controller does: a real nginx in
// front of three Causeway replicas on one Redis, 16 clients calling tools/call without pause,
// and for each replica replaced: a new replica starts, the old one gets SIGTERM, and 3 s later
// nginx reloads its config with the old replica swapped for the new one. Every call succeeds.
//
// Two replicas are replaced, one per subtest, so both orders of the drain and the reload are
// covered: A's drain.delayMs (5 s) outlasts the reload (the balancer moves while A still
// accepts), B's (1 s) does not (B's listener closes while the old config still sends to it; nginx
// retries the refused connections on another replica). nginx runs deploy/nginx/mcp-routing.conf
// as a controller would write it, with its setting for a balancer that reloads: no client
// keep-alive (a reload closes idle client connections at once, losing a request a client has just
// sent on one); upstream keep-alive and `proxy_next_upstream error timeout` (a POST is passed on
// only when it never reached a replica) as shipped.

import t, { type Test } from 'tap';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch } from 'undici';
import { spawnCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { startNginx } from '../helpers/nginx.js';
import { exitOf } from '../helpers/processes.js';
import { startRedis } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { spawnFixture } from './upstreams.js';
import { modernBody, modernHeaders } from './wire.js';

const CLIENTS = 16;
/** How long after the old replica's SIGTERM the controller reloads nginx. */
const RELOAD_LAG_MS = 3_000;
const CALL_TIMEOUT_MS = 30_000;

type Replica = RunningCauseway & { child: ChildProcess };

const redis = await startRedis(t);
const upstream = await spawnFixture(0, { t });
const shared = {
  'upstream.url': upstream.url,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': randomBytes(32).toString('base64'),
  'drain.timeoutMs': 10_000,
  'log.level': 'info',
};
/** A replica of the deployment; `delayMs` is its drain.delayMs. Given time to drain when its test ends. */
const replica = (delayMs: number) =>
  spawnCauseway({ ...shared, 'drain.delayMs': delayMs }, { t, graceMs: 30_000 }) as Promise<Replica>;

// Started together: the three serving now, and the two that replace A and B. Only A and B drain
// under load; the others drain when the test ends, with no balancer to wait for.
const [a, b, c, d, e] = await Promise.all([replica(5_000), replica(1_000), replica(0), replica(0), replica(0)]);

// The shipped config, as the controller writes it for these endpoints: every upstream block lists
// them, nginx listens on the port chosen for it, and client keep-alive is off, as the file says
// to where nginx reloads while it serves.
const SHIPPED = readFileSync(fileURLToPath(new URL('../../../deploy/nginx/mcp-routing.conf', import.meta.url)), 'utf8');
const UPSTREAM_SERVERS = /^(upstream \w+ \{\n(?:\s*#[^\n]*\n)*)((?:\s*server [^\n]*\n)+)/gm;

function balancer(endpoints: Replica[]): (port: number) => string {
  const servers = endpoints.map((r) => `    server 127.0.0.1:${r.port};\n`).join('');
  return (port) => {
    let rewritten = 0;
    const withServers = SHIPPED.replace(UPSTREAM_SERVERS, (_, head: string) => (rewritten++, head + servers));
    if (rewritten === 0 || rewritten !== SHIPPED.split('\nupstream ').length - 1)
      throw new Error('not every upstream block of the shipped config starts with its server lines');
    const at = withServers.indexOf('\nserver {');
    const [upstreams, server] = [withServers.slice(0, at), withServers.slice(at)];
    once(server, 'listen 8080;');
    once(server, 'keepalive_timeout 60s;');
    if (!server.includes('proxy_next_upstream error timeout;'))
      throw new Error('the shipped config no longer says proxy_next_upstream error timeout');
    return (
      upstreams +
      server
        .replace('listen 8080;', `listen 127.0.0.1:${port};`)
        .replace('keepalive_timeout 60s;', 'keepalive_timeout 0;')
    );
  };
}

/** The shipped server block must hold `text` exactly once, or the rewrite above means nothing. */
function once(block: string, text: string): void {
  const n = block.split(text).length - 1;
  if (n !== 1) throw new Error(`the server block of deploy/nginx/mcp-routing.conf has ${n} "${text}", expected 1`);
}

const nginx = await startNginx(t, balancer([a, b, c]));
const MCP = `http://127.0.0.1:${nginx.port}/mcp`;
// The clients keep connections alive as they would anywhere; this nginx answers Connection: close.
const dispatcher = new Agent({ connections: 64 });
t.teardown(() => dispatcher.close());

let nextId = 1;

/** One echo call through nginx; what went wrong, or undefined. */
async function call(text: string): Promise<string | undefined> {
  try {
    const res = await fetch(MCP, {
      method: 'POST',
      headers: modernHeaders('tools/call', 'echo'),
      body: JSON.stringify(modernBody('tools/call', { name: 'echo', arguments: { text } }, nextId++)),
      // A call that hangs is a failure, not a stuck test.
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      dispatcher,
    });
    const body = await res.text();
    if (res.status !== 200) return `${res.status} ${body.slice(0, 200)}`;
    const got = (JSON.parse(body) as { result?: { content?: Array<{ text?: string }> } }).result?.content?.[0]?.text;
    return got === text ? undefined : `answered ${body.slice(0, 200)}`;
  } catch (err) {
    const e = err as Error & { cause?: Error & { code?: string } };
    return `${e.message}: ${e.cause?.code ?? ''} ${e.cause?.message ?? ''}`;
  }
}

/** The calls a replica answered, from its /metrics. */
async function answered(r: Replica): Promise<number> {
  const text = await (await fetch(`${r.adminUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('causeway_requests_total{') && l.includes('method="tools/call"'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

let endpoints = [a, b, c];

/**
 * One step of the rolling update under load: `next` is ready, `old` gets SIGTERM, and
 * RELOAD_LAG_MS later nginx reloads with `old` swapped for `next`.
 */
async function replace(t: Test, old: Replica, next: Replica): Promise<void> {
  const failures: string[] = [];
  let calls = 0;
  let stop = false;
  const caller = async (i: number) => {
    for (let n = 0; !stop; n++) {
      const wrong = await call(`c${i}-${n}`);
      if (wrong) failures.push(`c${i}-${n}: ${wrong}`);
      calls++;
    }
  };
  const load = Array.from({ length: CLIENTS }, (_, i) => caller(i));
  try {
    // Bounded, not asserted: a load that never got going shows in the counts below.
    await until(() => calls >= 100, { what: '100 calls before the SIGTERM', everyMs: 25 }).catch(() => undefined);
    const t0 = Date.now();
    const exited = exitOf(old.child).then((x) => ({ ...x, ms: Date.now() - t0 }));
    old.child.kill('SIGTERM');
    const atSigterm = calls;
    // The controller's lag: the time it takes to see the endpoint change and write the config.
    await new Promise((r) => setTimeout(r, RELOAD_LAG_MS));
    endpoints = endpoints.map((r) => (r === old ? next : r));
    await nginx.reload(balancer(endpoints));
    const atReload = { calls, ms: Date.now() - t0 };
    const exit = await exited;
    const atExit = calls;
    await nginx.oldWorkersGone();
    // Load goes on a little after the old replica and the old workers are gone, then stops.
    await until(() => calls >= atExit + 100, { what: '100 calls after the exit', everyMs: 25 }).catch(() => undefined);
    stop = true;
    await Promise.all(load);
    const onNext = await answered(next);

    t.comment(
      `${calls} calls, ${failures.length} failed; ${atSigterm} by ` +
        `the SIGTERM, ${atReload.calls} by the reload (a new worker ` +
        `${atReload.ms} ms after the SIGTERM), ${atExit} by the exit ` +
        `(${exit.ms} ms after); ${onNext} answered by the new replica`,
    );
    if (failures.length > 0) {
      t.comment(`nginx error.log:\n${readFileSync(join(nginx.dir, 'error.log'), 'utf8')}`);
      t.comment(`the drained replica logged:\n${old.logs.filter((l) => !l.includes('"level":30')).join('\n')}`);
    }
    t.same(failures.slice(0, 10), [], 'no call failed');
    t.equal(exit.code, 0, 'the drained replica exited 0');
    t.ok(calls > atExit, 'calls went on after the drained replica exited');
    t.ok(onNext > 0, 'the reloaded nginx sends calls to the new replica');
  } finally {
    stop = true;
    await Promise.all(load);
  }
}

t.test('modern_client-to-reloading-nginx-to-three-replicas-replace-one-draining-5s', async (t) => {
  await replace(t, a, d);
});

t.test('modern_client-to-reloading-nginx-to-three-replicas-replace-one-draining-1s', async (t) => {
  await replace(t, b, e);
});
