// The load generator: a separate process (forked by bench/run.ts, jobs over IPC), so the load
// never shares an event loop with what it measures. Plain request/response workloads run on
// autocannon; every response's latency is taken from its 'response' event in float ms
// (autocannon's own histogram keeps whole milliseconds only). The multi-round workload needs a
// client that answers asks, which autocannon cannot be: a small undici driver runs it.

import autocannon from 'autocannon';
import { Agent, request } from 'undici';
import {
  answerAsk,
  legacyHeaders,
  messagesOf,
  modernHeaders,
  modernMeta,
  MULTI_ROUND_TOOL,
  type HttpRequestSpec,
} from './mcp.js';

export interface LatencyStats {
  /** Completed operations (HTTP responses, or whole multi-round calls). */
  count: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
  errors: number;
}

export interface CannonJob {
  kind: 'cannon';
  url: string;
  spec: HttpRequestSpec;
  connections: number;
  durationMs: number;
}

export interface CannonResult extends LatencyStats {
  non2xx: number;
  timeouts: number;
}

export interface MultiRoundJob {
  kind: 'multiround';
  era: 'legacy' | 'modern';
  url: string;
  sessionId?: string;
  protocolVersion?: string;
  connections: number;
  durationMs: number;
}

export interface MultiRoundResult extends LatencyStats {
  /** HTTP exchanges the client made, over all calls. */
  exchanges: number;
  /** input_required rounds (modern) or asks answered (legacy), over all calls. */
  rounds: number;
  firstError?: string;
}

export interface FillJob {
  kind: 'fill';
  url: string;
  principalHeader: string;
  sessions: number;
  pending: number;
  concurrency: number;
}

export interface FillResult {
  sessionsOk: number;
  pendingOk: number;
  errors: number;
  seconds: number;
  firstError?: string;
}

/**
 * For the scale phase: one small tools/call per principal `<prefix><i>`, i = first, first + step,
 * ... below end, each sent to urls[(i + shift) % urls.length], so which replica saw a principal
 * first is known (shift 0) and a later pass can go elsewhere (shift 1) or to the same one (0).
 */
export interface SpreadJob {
  kind: 'spread';
  urls: string[];
  principalHeader: string;
  prefix: string;
  first: number;
  end: number;
  step: number;
  shift: number;
  /** Declared in `_meta` (the bench's default asks for nothing: no roots, sampling, elicitation). */
  clientCapabilities: Record<string, unknown>;
  concurrency: number;
  /** Request i goes as principal i mod this (unset: every request a principal of its own). */
  principals?: number;
}

export interface SpreadResult {
  sent: number;
  ok: number;
  errors: number;
  seconds: number;
  firstError?: string;
}

export type Job = CannonJob | MultiRoundJob | FillJob | SpreadJob;

function stats(samples: number[], seconds: number, errors: number): LatencyStats {
  const sorted = Float64Array.from(samples).sort();
  const n = sorted.length;
  const at = (q: number) => (n === 0 ? NaN : sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!);
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: n,
    seconds,
    perSecond: seconds > 0 ? n / seconds : 0,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    meanMs: n === 0 ? NaN : sum / n,
    maxMs: n === 0 ? NaN : sorted[n - 1]!,
    errors,
  };
}

function cannon(job: CannonJob): Promise<CannonResult> {
  return new Promise((resolve, reject) => {
    const samples: number[] = [];
    const started = process.hrtime.bigint();
    const inst = autocannon(
      {
        url: job.url,
        method: job.spec.method,
        headers: job.spec.headers,
        body: job.spec.body,
        idReplacement: true,
        connections: job.connections,
        pipelining: 1,
        duration: job.durationMs / 1000,
        timeout: 10,
        sampleInt: 50,
      },
      (err, result) => {
        if (err) return reject(err);
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        resolve({ ...stats(samples, seconds, result.errors), non2xx: result.non2xx, timeouts: result.timeouts });
      },
    );
    inst.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (statusCode >= 200 && statusCode < 300) samples.push(responseTime);
    });
  });
}

const agent = new Agent({ keepAliveTimeout: 60_000, connections: null, pipelining: 1 });

async function post(url: string, headers: Record<string, string>, body: string) {
  return request(url, { method: 'POST', headers, body, dispatcher: agent });
}

/** Splits an SSE byte stream into the JSON messages of its events. */
async function* sseMessages(body: AsyncIterable<Buffer>): AsyncGenerator<any> {
  let buf = '';
  for await (const chunk of body) {
    buf += chunk.toString('utf8');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data !== '') yield JSON.parse(data);
    }
  }
}

let nextId = 1;

/** A legacy client inside its session: the call's SSE stream carries the asks; answers go back as POSTs. */
async function legacyMultiRound(job: MultiRoundJob): Promise<{ exchanges: number; rounds: number }> {
  const headers = legacyHeaders(job.sessionId!, job.protocolVersion!);
  const id = `mr-${nextId++}`;
  const res = await post(
    job.url,
    headers,
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: MULTI_ROUND_TOOL, arguments: {} } }),
  );
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`);
  let exchanges = 1;
  let rounds = 0;
  let done = false;
  const answers: Array<Promise<void>> = [];
  for await (const msg of sseMessages(res.body as AsyncIterable<Buffer>)) {
    // After the result, read on to the end of the stream so the connection stays reusable.
    if (done) continue;
    if (typeof msg.method === 'string' && msg.id !== undefined) {
      rounds++;
      exchanges++;
      const answer = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: answerAsk(msg.method, msg.params) });
      answers.push(
        post(job.url, headers, answer).then(async (r) => {
          await r.body.dump();
          if (r.statusCode !== 202 && r.statusCode !== 200) throw new Error(`answer: HTTP ${r.statusCode}`);
        }),
      );
    } else if (msg.id === id) {
      await Promise.all(answers);
      if (msg.error) throw new Error(`error ${JSON.stringify(msg.error).slice(0, 200)}`);
      if (rounds !== 2) throw new Error(`expected 2 asks, got ${rounds}`);
      done = true;
    }
  }
  if (!done) throw new Error('stream ended without a result');
  return { exchanges, rounds };
}

/** A modern client: input_required rounds answered by retrying with inputResponses and the requestState. */
async function modernMultiRound(
  url: string,
  principal?: { header: string; value: string },
  stopAfterFirst = false,
): Promise<{ exchanges: number; rounds: number }> {
  const headers = modernHeaders(
    'tools/call',
    MULTI_ROUND_TOOL,
    principal ? { [principal.header]: principal.value } : {},
  );
  const base = { name: MULTI_ROUND_TOOL, arguments: {}, _meta: modernMeta() };
  let params: Record<string, unknown> = base;
  let exchanges = 0;
  for (let round = 0; round < 5; round++) {
    const res = await post(
      url,
      headers,
      JSON.stringify({ jsonrpc: '2.0', id: `mr-${nextId++}`, method: 'tools/call', params }),
    );
    exchanges++;
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
    const msg = JSON.parse(text);
    if (msg.error) throw new Error(`error ${JSON.stringify(msg.error).slice(0, 200)}`);
    const result = msg.result;
    if (result?.resultType !== 'input_required') {
      if (round !== 2) throw new Error(`expected 2 rounds, got ${round}`);
      return { exchanges, rounds: round };
    }
    if (stopAfterFirst) return { exchanges, rounds: 1 };
    const inputResponses: Record<string, unknown> = {};
    for (const [key, ir] of Object.entries(
      result.inputRequests as Record<string, { method: string; params: unknown }>,
    )) {
      inputResponses[key] = answerAsk(ir.method, ir.params);
    }
    params = { ...base, inputResponses, requestState: result.requestState };
  }
  throw new Error('too many rounds');
}

async function multiRound(job: MultiRoundJob): Promise<MultiRoundResult> {
  const samples: number[] = [];
  let errors = 0;
  let exchanges = 0;
  let rounds = 0;
  let firstError: string | undefined;
  const started = process.hrtime.bigint();
  const deadline = Date.now() + job.durationMs;
  const loop = async () => {
    while (Date.now() < deadline) {
      const t0 = process.hrtime.bigint();
      try {
        const r = job.era === 'legacy' ? await legacyMultiRound(job) : await modernMultiRound(job.url);
        samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
        exchanges += r.exchanges;
        rounds += r.rounds;
      } catch (err) {
        errors++;
        firstError ??= (err as Error).message;
        if (errors > 1000) return;
      }
    }
  };
  await Promise.all(Array.from({ length: job.connections }, loop));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { ...stats(samples, seconds, errors), exchanges, rounds, firstError };
}

/**
 * For the memory target: `sessions` pooled sessions (one per principal), then `pending` multi-round calls held between
 * rounds.
 */
async function fill(job: FillJob): Promise<FillResult> {
  const started = Date.now();
  let sessionsOk = 0;
  let pendingOk = 0;
  let errors = 0;
  let firstError: string | undefined;
  const fail = (err: unknown) => {
    errors++;
    firstError ??= (err as Error).message;
  };
  let next = 0;
  const discover = async () => {
    for (let i = next++; i < job.sessions; i = next++) {
      try {
        const headers = modernHeaders('server/discover', undefined, { [job.principalHeader]: `bench-principal-${i}` });
        const res = await post(
          job.url,
          headers,
          JSON.stringify({ jsonrpc: '2.0', id: i, method: 'server/discover', params: { _meta: modernMeta() } }),
        );
        const text = await res.body.text();
        if (res.statusCode !== 200 || !JSON.parse(text).result)
          throw new Error(`discover: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
        sessionsOk++;
      } catch (err) {
        fail(err);
      }
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, discover));
  next = 0;
  const hold = async () => {
    for (let i = next++; i < job.pending; i = next++) {
      try {
        await modernMultiRound(job.url, { header: job.principalHeader, value: `bench-principal-${i}` }, true);
        pendingOk++;
      } catch (err) {
        fail(err);
      }
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, hold));
  return { sessionsOk, pendingOk, errors, seconds: (Date.now() - started) / 1000, firstError };
}

async function spread(job: SpreadJob): Promise<SpreadResult> {
  const started = Date.now();
  let sent = 0;
  let ok = 0;
  let errors = 0;
  let firstError: string | undefined;
  const meta = modernMeta({ 'io.modelcontextprotocol/clientCapabilities': job.clientCapabilities });
  let next = job.first;
  const loop = async () => {
    for (let i = next; i < job.end; i = next) {
      next += job.step;
      sent++;
      try {
        const url = job.urls[(i + job.shift) % job.urls.length]!;
        const headers = modernHeaders('tools/call', 'echo', {
          [job.principalHeader]: `${job.prefix}${job.principals ? i % job.principals : i}`,
        });
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name: 'echo', arguments: { text: 'hello' }, _meta: meta },
        });
        const res = await post(url, headers, body);
        const text = await res.body.text();
        const msgs = messagesOf(String(res.headers['content-type'] ?? ''), text);
        const last = msgs[msgs.length - 1];
        if (res.statusCode !== 200 || !last?.result)
          throw new Error(`tools/call: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
        ok++;
      } catch (err) {
        errors++;
        firstError ??= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, loop));
  return { sent, ok, errors, seconds: (Date.now() - started) / 1000, firstError };
}

async function run(job: Job): Promise<unknown> {
  switch (job.kind) {
    case 'cannon':
      return cannon(job);
    case 'multiround':
      return multiRound(job);
    case 'fill':
      return fill(job);
    case 'spread':
      return spread(job);
  }
}

process.on('message', (msg: { id: number; job: Job }) => {
  run(msg.job).then(
    (result) => process.send!({ id: msg.id, ok: true, result }),
    (err: unknown) =>
      process.send!({ id: msg.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});
process.on('disconnect', () => process.exit(0));
