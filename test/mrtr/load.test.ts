// 1,000 held multi-round calls at once: Causeway (a child process) keeps answering /healthz and
// ordinary calls promptly while holding them, then completes every one of them. The fixture runs
// in its own process too, so the latencies measured here are Causeway's.

import t from 'tap';
import http from 'node:http';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { spawnCauseway } from '../helpers/causeway.js';
import { spawnFixture } from '../e2e/upstreams.js';
import { ELICIT, nameAnswer, rpcHttp, type Reply } from './wire.js';

const HELD = 1000;
const BATCH = 200;
/** Bound on /healthz p99 while the calls are held (measured figures are printed as comments). */

const fixture = await spawnFixture();
const fixtureBase = new URL(fixture.url).origin;
const causeway = await spawnCauseway({
  'upstream.url': fixture.url,
  'mrtr.maxPendingPerPrincipal': HELD * 2,
  'mrtr.stateTtlMs': 60_000,
});
t.teardown(async () => {
  await causeway.close();
  await fixture.stop();
});

const origin = new URL(causeway.url).origin;
const loadAgent = new http.Agent({ keepAlive: true, maxSockets: BATCH });
const probeAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
// One-off reads between phases get a new connection: a kept-alive one idle through a phase longer
// than the server's keep-alive timeout (5 s on a busy machine) could be closed as it is reused.
const onceAgent = new http.Agent({ keepAlive: false });
t.teardown(() => {
  loadAgent.destroy();
  probeAgent.destroy();
  onceAgent.destroy();
});

function get(url: string, agent: http.Agent): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      })
      .on('error', reject);
  });
}

async function fixtureStats(): Promise<{
  toolCalls: Record<string, number>;
  responsesReceived: number;
  cancelled: number;
}> {
  return JSON.parse((await get(`${fixtureBase}/__stats`, onceAgent)).text);
}

/** Causeway's own event-loop delay since the last scrape (prom-client resets the histogram per scrape). */
async function causewayLag(): Promise<{ p99: number; max: number }> {
  const text = (await get(`${causeway.adminUrl}/metrics`, onceAgent)).text;
  const read = (name: string) =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

/** Probes /healthz back to back (every `everyMs`) until stopped; returns the latencies. */
function prober(everyMs: number): { stop(): Promise<number[]> } {
  const lat: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      const r = await get(`${origin}/healthz`, probeAgent);
      if (r.status !== 200) throw new Error(`healthz ${r.status}`);
      lat.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return lat;
    },
  };
}

const fmt = (xs: number[]) =>
  `n=${xs.length} p50=${percentile(xs, 50).toFixed(1)}ms ` +
  `p99=${percentile(xs, 99).toFixed(1)}ms max=${Math.max(...xs).toFixed(1)}ms`;

t.test(`${HELD} calls held at once without stalling Causeway`, async (t) => {
  const call = (
    extra: Record<string, unknown> = {},
    name = ELICIT,
    args: Record<string, unknown> = {},
  ): Promise<Reply> => rpcHttp(causeway.url, 'tools/call', { name, arguments: args, ...extra }, { agent: loadAgent });

  // Warm up: the upstream session, connections, JIT.
  const warm = await call();
  await call({ inputResponses: { user_name: nameAnswer('warm') }, requestState: warm.body.result.requestState });
  const before = await fixtureStats();
  await causewayLag();
  const localLag = monitorEventLoopDelay({ resolution: 10 });
  localLag.enable();

  // Ramp: HELD round-1 requests in batches over keep-alive.
  const ramp = prober(10);
  const states: string[] = [];
  const t0 = performance.now();
  for (let i = 0; i < HELD; i += BATCH) {
    const replies = await Promise.all(Array.from({ length: Math.min(BATCH, HELD - i) }, () => call()));
    for (const r of replies) {
      if (r.body?.result?.resultType !== 'input_required')
        throw new Error(`round 1: ${JSON.stringify(r.body).slice(0, 300)}`);
      states.push(r.body.result.requestState);
    }
  }
  const rampMs = performance.now() - t0;
  const rampLat = await ramp.stop();
  const rampLag = await causewayLag();
  t.equal(states.length, HELD, `${HELD} input_required rounds in ${rampMs.toFixed(0)} ms`);
  t.comment(
    `ramp: ${HELD} round-1 requests in ${rampMs.toFixed(0)} ms; healthz ${fmt(rampLat)}; ` +
      `causeway event-loop lag p99=${rampLag.p99.toFixed(1)}ms max=${rampLag.max.toFixed(1)}ms`,
  );

  const held = await fixtureStats();
  t.equal((held.toolCalls[ELICIT] ?? 0) - (before.toolCalls[ELICIT] ?? 0), HELD, 'every call is open upstream');
  t.equal(held.responsesReceived, before.responsesReceived, 'none answered yet');
  t.equal(held.cancelled, before.cancelled, 'none cancelled');

  // Hold: probe /healthz and make ordinary calls while all HELD are pending.
  const hold = prober(5);
  const echoLat: number[] = [];
  for (let i = 0; i < 20; i++) {
    const e0 = performance.now();
    const r = await call({}, 'echo', { text: `e${i}` });
    echoLat.push(performance.now() - e0);
    t.equal(r.body?.result?.content?.[0]?.text, `e${i}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  const holdLat = await hold.stop();
  const holdLag = await causewayLag();
  t.comment(
    `hold: healthz ${fmt(holdLat)}; echo ${fmt(echoLat)}; causeway event-loop ` +
      `lag p99=${holdLag.p99.toFixed(1)}ms max=${holdLag.max.toFixed(1)}ms`,
  );
  // What is asserted is that Causeway keeps answering while it holds the calls (a probe that gets
  // anything but 200 fails the test); how fast is the benchmarks' business, so it is only shown.
  t.ok(holdLat.length > 0, 'healthz answered 200 throughout the hold');
  t.equal(echoLat.length, 20, 'every echo call was answered while holding');

  // Complete every held call.
  const done = prober(10);
  const c0 = performance.now();
  let ok = 0;
  for (let i = 0; i < HELD; i += BATCH) {
    const replies = await Promise.all(
      states
        .slice(i, i + BATCH)
        .map((s, j) => call({ inputResponses: { user_name: nameAnswer(`u${i + j}`) }, requestState: s })),
    );
    replies.forEach((r, j) => {
      if (r.body?.result?.content?.[0]?.text === `Hello, u${i + j}!`) ok++;
    });
  }
  const completeMs = performance.now() - c0;
  const doneLat = await done.stop();
  const doneLag = await causewayLag();
  localLag.disable();
  t.equal(ok, HELD, `every held call completed with its own answer (${completeMs.toFixed(0)} ms)`);
  t.comment(
    `complete: ${HELD} retries in ${completeMs.toFixed(0)} ms; healthz ${fmt(doneLat)}; ` +
      `causeway event-loop lag p99=${doneLag.p99.toFixed(1)}ms max=${doneLag.max.toFixed(1)}ms`,
  );
  t.comment(
    `test process event-loop delay over the whole run: ` +
      `p99=${(localLag.percentile(99) / 1e6).toFixed(1)}ms max=${(localLag.max / 1e6).toFixed(1)}ms`,
  );
  const after = await fixtureStats();
  t.equal(after.responsesReceived - before.responsesReceived, HELD, 'one answer upstream per call');
  t.equal(after.cancelled, before.cancelled, 'nothing cancelled');
});
