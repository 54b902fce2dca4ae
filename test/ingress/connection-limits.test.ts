// Connection-level limits of the data port, with real sockets: limits.headersTimeoutMs (a
// complete HTTP/1.1 request head, or an h2c connection's first stream, and the protocol sniff
// before either), limits.maxConnections (closed at once beyond it) and limits.idleTimeoutMs
// (keep-alive connections with nothing in progress). A flood of idle and byte-a-second sockets
// against the bin under `ulimit -n 1024` must not starve an established keep-alive client, and
// every attack socket must be closed by the server; the closes are counted on /metrics as
// causeway_connections_closed_total{reason} beside the causeway_connections_open gauge.
// Time bounds are generous upper bounds (the machine may be busy); lower bounds only state what
// the server may not do early.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http2, { type ClientHttp2Session } from 'node:http2';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { Client } from 'undici';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway, startCauseway } from '../helpers/causeway.js';
import { firstText, post, rawStatus, sleep, toolCall, type JsonObject } from '../e2e/wire.js';
import { h2Post } from './h2.js';
import { until } from '../helpers/until.js';

const HEADERS_TIMEOUT_MS = 3_000;
const MAX_CONNECTIONS = 900;
const NOFILE = 1_024;
const IDLE_SOCKETS = 1_000;
const SLOW_H1 = 60;
const SLOW_H2_PREFACE = 20;
const SLOW_H2_SETTINGS = 20;
const SLOW_SOCKETS = SLOW_H1 + SLOW_H2_PREFACE + SLOW_H2_SETTINGS;
/** Slack on every "closed within" bound: the machine has 2 cores and may be busy. */
const MARGIN_MS = 20_000;
const CALL_EVERY_MS = 200;
const IDLE_TIMEOUT_MS = 1_500;
const SLOW_TOOL_MS = 3 * IDLE_TIMEOUT_MS;

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** An empty SETTINGS frame: length 0, type 0x4, no flags, stream 0. */
const H2_EMPTY_SETTINGS = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
const now = () => performance.now();

const upstream = await startLegacyServer();
t.teardown(() => upstream.close());

// ---- Prometheus text -------------------------------------------------------------------------

interface Sample {
  labels: Record<string, string>;
  value: number;
}

function samples(text: string, name: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of a metric's samples whose labels include `match`; undefined when there is none. */
function metric(text: string, name: string, match: Record<string, string> = {}): number | undefined {
  const hits = samples(text, name).filter((s) => Object.entries(match).every(([k, v]) => s.labels[k] === v));
  return hits.length === 0 ? undefined : hits.reduce((a, s) => a + s.value, 0);
}

async function scrape(adminUrl: string): Promise<string> {
  const res = await fetch(`${adminUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

// ---- attack sockets --------------------------------------------------------------------------

type Kind = 'idle' | 'slow-h1' | 'slow-h2-preface' | 'h2-settings-then-nothing';

interface Attack {
  kind: Kind;
  socket: net.Socket;
  openedAt: number;
  connectedAt?: number;
  /** When the server ended the connection (FIN, reset, or close we did not cause). */
  closedAt?: number;
  how?: string;
  connectError?: string;
}

const SLOW_H1_HEAD = Buffer.from(
  'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ' +
    'application/json\r\nAccept: application/json, text/event-stream\r\n' +
    'Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nContent-Length: 2\r\n\r\n{}',
  'latin1',
);

function attack(port: number, kind: Kind, all: Attack[], destroying: { value: boolean }): Attack {
  const socket = net.connect({ port, host: '127.0.0.1' });
  const a: Attack = { kind, socket, openedAt: now() };
  all.push(a);
  const closed = (how: string) => {
    if (a.closedAt === undefined && !destroying.value) {
      a.closedAt = now();
      a.how = how;
    }
  };
  socket.on('data', () => undefined); // read whatever the server says (SETTINGS, 408), so 'end' comes
  socket.on('end', () => closed('end'));
  socket.on('close', () => closed('close'));
  socket.on('error', (err: NodeJS.ErrnoException) => {
    if (a.connectedAt === undefined && a.connectError === undefined) a.connectError = err.code ?? err.message;
    closed(`error ${err.code ?? err.message}`);
  });
  socket.once('connect', () => {
    a.connectedAt = now();
    if (kind === 'idle') return;
    if (kind === 'h2-settings-then-nothing') {
      socket.write(Buffer.concat([H2_PREFACE, H2_EMPTY_SETTINGS]));
      return;
    }
    // One byte a second, never a whole head (or a whole preface).
    const bytes = kind === 'slow-h1' ? SLOW_H1_HEAD : H2_PREFACE;
    let i = 0;
    const drip = () => {
      if (a.closedAt !== undefined || socket.destroyed || i >= bytes.length - 1) return;
      socket.write(bytes.subarray(i, i + 1));
      i += 1;
      setTimeout(drip, 1_000).unref();
    };
    drip();
  });
  return a;
}

/** Whether `cond` holds within `ms`: these bounds are what the tests assert. */
function within(what: string, cond: () => boolean, ms: number): Promise<boolean> {
  return until(cond, { what, timeoutMs: ms, everyMs: 50 }).then(
    () => true,
    () => false,
  );
}

// ---- test 1: the flood -----------------------------------------------------------------------

t.test('flood of idle and slow sockets under ulimit -n 1024: attackers closed, keep-alive client served', async (t) => {
  // This process opens ~1,100 sockets of its own.
  const ulimit = spawnSync('bash', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim();
  t.ok(
    ulimit === 'unlimited' || Number(ulimit) >= 4_000,
    `the test process may open enough descriptors (ulimit -n ${ulimit})`,
  );

  const causeway = await spawnCauseway(
    {
      'upstream.url': upstream.url,
      'limits.headersTimeoutMs': HEADERS_TIMEOUT_MS,
      'limits.maxConnections': MAX_CONNECTIONS,
      'log.level': 'info',
    },
    { t, nofile: NOFILE },
  );
  const attacks: Attack[] = [];
  const destroying = { value: false };
  let client: Client | undefined;
  let calling = true;
  let sampling = true;
  t.teardown(async () => {
    calling = false;
    sampling = false;
    destroying.value = true;
    for (const a of attacks) a.socket.destroy();
    await client?.destroy().catch(() => undefined);
    const exited = causeway.close();
    const killer = setTimeout(() => causeway.child.kill('SIGKILL'), 8_000);
    await exited;
    clearTimeout(killer);
  });
  const adminUrl = causeway.adminUrl!;
  const origin = new URL(causeway.url).origin;
  const path = new URL(causeway.url).pathname;

  const limits = readFileSync(`/proc/${causeway.child.pid}/limits`, 'utf8');
  t.match(limits, new RegExp(`^Max open files\\s+${NOFILE}\\s+`, 'm'), `causeway runs with ${NOFILE} descriptors`);

  // The established keep-alive client: one connection, opened before the flood.
  client = new Client(origin, {
    pipelining: 1,
    keepAliveTimeout: 600_000,
    keepAliveMaxTimeout: 600_000,
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  let connects = 0;
  const disconnects: string[] = [];
  client.on('connect', () => (connects += 1));
  client.on('disconnect', (_o, _t, err) => disconnects.push(err?.message ?? 'disconnect'));
  let callNo = 0;
  const call = async (): Promise<string> => {
    const n = ++callNo;
    const { body, headers } = toolCall('echo', { text: `ka-${n}` } as JsonObject, `ka-${n}`);
    try {
      const res = await client!.request({ path, method: 'POST', headers, body: JSON.stringify(body) });
      const text = await res.body.text();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      const got = firstText({ json });
      return res.statusCode === 200 && got === `ka-${n}` ? 'ok' : `HTTP ${res.statusCode} ${text.slice(0, 200)}`;
    } catch (err) {
      return `error ${(err as NodeJS.ErrnoException).code ?? ''} ${(err as Error).message}`;
    }
  };
  t.equal(await call(), 'ok', 'a modern call on the keep-alive client before the flood');
  t.equal(connects, 1, 'the keep-alive client holds one connection');

  // Modern calls every ~200 ms for as long as the flood lasts.
  const outcomes: string[] = [];
  const caller = (async () => {
    while (calling) {
      const started = now();
      outcomes.push(await call());
      await sleep(Math.max(0, CALL_EVERY_MS - (now() - started)));
    }
  })();
  // The open-connections gauge, sampled from the admin port while the flood lasts.
  const openSeen: number[] = [];
  const sampler = (async () => {
    while (sampling) {
      try {
        const v = metric(await scrape(adminUrl), 'causeway_connections_open');
        if (v !== undefined) openSeen.push(v);
      } catch {
        /* a slow scrape is not the point */
      }
      await sleep(250);
    }
  })();

  // Slow sockets first, while there is room under maxConnections: each must then live to its
  // headers timeout. Then the idle flood, in batches, past maxConnections.
  const port = causeway.port;
  for (let i = 0; i < SLOW_SOCKETS; i++) {
    const kind: Kind =
      i < SLOW_H1 ? 'slow-h1' : i < SLOW_H1 + SLOW_H2_PREFACE ? 'slow-h2-preface' : 'h2-settings-then-nothing';
    attack(port, kind, attacks, destroying);
  }
  await within(
    'slow sockets connected',
    () => attacks.every((a) => a.connectedAt !== undefined || a.connectError !== undefined),
    10_000,
  );
  for (let i = 0; i < IDLE_SOCKETS; i++) {
    attack(port, 'idle', attacks, destroying);
    if (i % 100 === 99) await sleep(20);
  }
  const deadline = HEADERS_TIMEOUT_MS + MARGIN_MS;
  const allClosed = await within(
    'every attack socket closed',
    () => attacks.every((a) => a.closedAt !== undefined),
    deadline + 2_000,
  );
  calling = false;
  sampling = false;
  await caller;
  await sampler;

  // Every attack socket was closed by the server, each within headersTimeoutMs + margin.
  const open = attacks.filter((a) => a.closedAt === undefined);
  t.ok(
    allClosed,
    `every one of ${attacks.length} attack sockets was closed by the server ` +
      `(${open.length} still open: ${[...new Set(open.map((a) => a.kind))].join(', ')})`,
  );
  const late = attacks.filter((a) => a.closedAt !== undefined && a.closedAt - a.openedAt > deadline);
  const closedIn = attacks.filter((a) => a.closedAt !== undefined).map((a) => a.closedAt! - a.openedAt);
  const slowest = Math.round(Math.max(0, ...closedIn));
  t.equal(
    late.length,
    0,
    `each closed within headersTimeoutMs + ${MARGIN_MS} ms (slowest of the closed ${slowest} ms)`,
  );
  t.equal(
    attacks.filter((a) => a.connectError !== undefined).length,
    0,
    'every attack socket was accepted at TCP level (no connect error)',
  );
  for (const kind of ['slow-h1', 'slow-h2-preface', 'h2-settings-then-nothing'] as const) {
    const mine = attacks.filter((a) => a.kind === kind);
    const closed = mine.filter((a) => a.closedAt !== undefined);
    t.equal(closed.length, mine.length, `${kind}: all ${mine.length} closed`);
    // Opened with room to spare, so nothing but the headers timeout may close them, and not before it.
    const early = closed.filter((a) => a.closedAt! - a.openedAt < HEADERS_TIMEOUT_MS - 250);
    t.equal(
      early.length,
      0,
      `${kind}: none closed before headersTimeoutMs ` +
        `(earliest ${Math.round(Math.min(...closed.map((a) => a.closedAt! - a.openedAt)))} ms)`,
    );
  }

  // The established client was never starved nor cut off.
  const failed = outcomes.filter((o) => o !== 'ok');
  t.ok(outcomes.length >= 5, `modern calls kept being made during the flood (${outcomes.length})`);
  t.same(failed, [], `all ${outcomes.length} keep-alive calls during the flood succeeded`);
  t.equal(connects, 1, 'the keep-alive client never had to reconnect');
  t.same(disconnects, [], 'the keep-alive connection was never closed');

  // What /metrics says.
  const text = await scrape(adminUrl);
  const byMax = metric(text, 'causeway_connections_closed_total', { reason: 'max_connections' }) ?? 0;
  const byHeaders = metric(text, 'causeway_connections_closed_total', { reason: 'headers_timeout' }) ?? 0;
  t.ok(byMax > 0, `closes over maxConnections counted (reason="max_connections" ${byMax})`);
  t.ok(
    byHeaders >= SLOW_SOCKETS,
    `headers-timeout closes counted, the ${SLOW_SOCKETS} slow ` +
      `sockets at least (reason="headers_timeout" ${byHeaders})`,
  );
  t.ok(
    byMax + byHeaders >= attacks.length,
    `every attack socket's close is counted under one of ` + `the two (${byMax} + ${byHeaders} of ${attacks.length})`,
  );
  t.ok(openSeen.length > 0, `causeway_connections_open was sampled during the flood (${openSeen.length} samples)`);
  t.ok(
    Math.max(...openSeen) <= MAX_CONNECTIONS,
    `causeway_connections_open never above maxConnections (peak ${Math.max(...openSeen)})`,
  );
  let openNow: number | undefined;
  await until(
    async () => {
      openNow = metric(await scrape(adminUrl), 'causeway_connections_open');
      return openNow !== undefined && openNow <= 2;
    },
    { what: 'causeway_connections_open back to the keep-alive client', everyMs: 250 },
  ).catch(() => undefined);
  t.ok(
    openNow !== undefined && openNow <= 2,
    `after the flood causeway_connections_open is back to the keep-alive client (${openNow})`,
  );

  // Afterwards a fresh connection is served, and so is the old one.
  const fresh = toolCall('echo', { text: 'after the flood' }, 'fresh');
  const res = await post(causeway.url, fresh.body, fresh.headers, { timeoutMs: 15_000 });
  t.equal(res.status, 200, 'a fresh connection after the flood: HTTP 200');
  t.equal(firstText(res), 'after the flood', 'and its modern call is answered');
  t.equal(await call(), 'ok', 'the keep-alive client still works after the flood');
});

// ---- test 2: idle timeout --------------------------------------------------------------------

/** A raw HTTP/1.1 connection we never close ourselves before teardown. */
class RawH1 {
  readonly socket: net.Socket;
  closedAt: number | undefined;
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  private destroying = false;

  constructor(port: number) {
    this.socket = net.connect({ port, host: '127.0.0.1' });
    this.socket.on('data', (c: Buffer) => {
      this.buf = Buffer.concat([this.buf, c]);
      this.wake();
    });
    const closed = () => {
      if (this.closedAt === undefined && !this.destroying) this.closedAt = now();
      this.wake();
    };
    this.socket.on('end', closed);
    this.socket.on('close', closed);
    this.socket.on('error', closed);
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  connected(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
  }

  /** Writes one modern request; resolves with the status and body once the response is complete. */
  async request(
    port: number,
    body: JsonObject,
    headers: Record<string, string>,
    ms = 20_000,
  ): Promise<{ status: number; text: string; at: number }> {
    const payload = Buffer.from(JSON.stringify(body), 'utf8');
    const head =
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
      Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('') +
      `Content-Length: ${payload.length}\r\n\r\n`;
    this.buf = Buffer.alloc(0);
    this.socket.write(Buffer.concat([Buffer.from(head, 'latin1'), payload]));
    const end = now() + ms;
    for (;;) {
      const done = this.complete();
      if (done) return { ...done, at: now() };
      if (this.closedAt !== undefined)
        throw new Error(
          `connection closed before the response was complete: ${this.buf.toString('latin1').slice(0, 300)}`,
        );
      if (now() > end) throw new Error('no complete response in time');
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 250).unref();
      });
    }
  }

  private complete(): { status: number; text: string } | undefined {
    const raw = this.buf.toString('latin1');
    const cut = raw.indexOf('\r\n\r\n');
    if (cut < 0) return undefined;
    const head = raw.slice(0, cut);
    const status = rawStatus(head) ?? 0;
    const rest = this.buf.subarray(Buffer.byteLength(head, 'latin1') + 4);
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (length) {
      const n = Number(length[1]);
      return rest.length >= n ? { status, text: rest.subarray(0, n).toString('utf8') } : undefined;
    }
    if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
      const body = rest.toString('latin1');
      if (!/(^|\r\n)0\r\n\r\n$/.test(body)) return undefined;
      let out = '';
      let i = 0;
      for (;;) {
        const nl = body.indexOf('\r\n', i);
        const size = parseInt(body.slice(i, nl), 16);
        if (!size) break;
        out += body.slice(nl + 2, nl + 2 + size);
        i = nl + 2 + size + 2;
      }
      return { status, text: Buffer.from(out, 'latin1').toString('utf8') };
    }
    return undefined;
  }

  destroy() {
    this.destroying = true;
    this.socket.destroy();
  }
}

interface H2Conn {
  session: ClientHttp2Session;
  /** When the server sent GOAWAY or the session closed without us closing it. */
  closedAt: number | undefined;
  how: string | undefined;
  destroy(): void;
}

function h2c(port: number): Promise<H2Conn> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    let destroying = false;
    const c: H2Conn = {
      session,
      closedAt: undefined,
      how: undefined,
      destroy: () => {
        destroying = true;
        session.destroy();
      },
    };
    const closed = (how: string) => {
      if (c.closedAt === undefined && !destroying) {
        c.closedAt = now();
        c.how = how;
      }
    };
    session.on('goaway', (code) => closed(`goaway ${code}`));
    session.on('close', () => closed('close'));
    session.on('error', () => closed('error'));
    session.once('connect', () => resolve(c));
    session.once('error', reject);
  });
}

const parseJson = (text: string): any => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** An in-process Causeway with this idle timeout; the connections pushed on `conns` are closed with it. */
async function idleCauseway(t: { teardown(fn: () => unknown): void }, idleTimeoutMs: number) {
  const causeway = await startCauseway({
    'upstream.url': upstream.url,
    'limits.idleTimeoutMs': idleTimeoutMs,
    'log.level': 'warn',
  });
  const conns: Array<{ destroy(): void }> = [];
  t.teardown(async () => {
    for (const c of conns) c.destroy();
    await causeway.close();
  });
  return { causeway, conns, port: causeway.port, path: new URL(causeway.url).pathname };
}

t.test('limits.idleTimeoutMs: idle keep-alive connections closed, busy ones kept', async (t) => {
  const { causeway, conns, port, path } = await idleCauseway(t, IDLE_TIMEOUT_MS);
  const bound = IDLE_TIMEOUT_MS + MARGIN_MS;

  // Warm the upstream session so the slow calls' time is the tool's.
  const warm = toolCall('echo', { text: 'warm' }, 'warm');
  t.equal(firstText(await post(causeway.url, warm.body, warm.headers)), 'warm');

  // Four connections at once: h1 and h2c, each idle after one answer, or busy with a slow call.
  const idleH1 = new RawH1(port);
  const busyH1 = new RawH1(port);
  conns.push(idleH1, busyH1);
  await Promise.all([idleH1.connected(), busyH1.connected()]);
  const idleH2 = await h2c(port);
  const busyH2 = await h2c(port);
  conns.push(idleH2, busyH2);

  const echo = (id: string) => toolCall('echo', { text: id }, id);
  const slow = (id: string) => toolCall('slow', { ms: SLOW_TOOL_MS }, id);
  const [idleH1Res, idleH2Res, busyH1Res, busyH2Res] = await Promise.all([
    idleH1.request(port, echo('idle-h1').body, echo('idle-h1').headers),
    h2Post(idleH2.session, path, echo('idle-h2').headers, echo('idle-h2').body).then((r) => ({ ...r, at: now() })),
    busyH1.request(port, slow('busy-h1').body, slow('busy-h1').headers, SLOW_TOOL_MS + MARGIN_MS),
    h2Post(busyH2.session, path, slow('busy-h2').headers, slow('busy-h2').body).then((r) => ({ ...r, at: now() })),
  ]);

  t.equal(idleH1Res.status, 200, 'h1: first request answered');
  t.equal(firstText({ json: parseJson(idleH1Res.text) }), 'idle-h1');
  t.equal(idleH2Res.status, 200, 'h2c: first request answered');
  t.equal(firstText(idleH2Res), 'idle-h2');

  // A request in progress for 3x idleTimeoutMs: its connection stays, and the answer arrives on it.
  t.equal(busyH1Res.status, 200, `h1: a ${SLOW_TOOL_MS} ms call on its connection is answered`);
  t.equal(firstText({ json: parseJson(busyH1Res.text) }), 'done');
  t.ok(
    busyH1.closedAt === undefined || busyH1.closedAt >= busyH1Res.at,
    'h1: not closed while its request was in progress',
  );
  t.equal(busyH2Res.status, 200, `h2c: a ${SLOW_TOOL_MS} ms stream on its session is answered`);
  t.equal(firstText(busyH2Res), 'done');
  t.ok(
    busyH2.closedAt === undefined || busyH2.closedAt >= busyH2Res.at,
    `h2c: no GOAWAY nor close while its stream was in progress (${busyH2.how ?? 'open'})`,
  );

  // The idle ones were closed by the server, after idling (not before idleTimeoutMs less timer slack).
  for (const [name, c, answeredAt] of [
    ['h1', idleH1, idleH1Res.at],
    ['h2c', idleH2, idleH2Res.at],
    ['h1 after its slow call', busyH1, busyH1Res.at],
    ['h2c after its slow stream', busyH2, busyH2Res.at],
  ] as const) {
    const closed = await within(`${name} closed`, () => c.closedAt !== undefined, answeredAt + bound - now());
    t.ok(closed, `${name}: the idle connection was closed by the server within idleTimeoutMs + ${MARGIN_MS} ms`);
    if (c.closedAt !== undefined) {
      const idleFor = Math.round(c.closedAt - answeredAt);
      t.ok(idleFor >= IDLE_TIMEOUT_MS - 500, `${name}: closed after idling ${idleFor} ms, not before idleTimeoutMs`);
    }
  }

  const text = await scrape(causeway.adminUrl!);
  const byIdle = metric(text, 'causeway_connections_closed_total', { reason: 'idle_timeout' }) ?? 0;
  t.ok(byIdle >= 4, `idle closes counted (reason="idle_timeout" ${byIdle})`);
});

// The setting is the one in force: with a long idleTimeoutMs an idle connection outlives Node's
// 5 s keep-alive default and serves a second request. Only a lower bound: speed-independent.
t.test('a long limits.idleTimeoutMs is honoured: idle connections are not closed early', async (t) => {
  const LONG_IDLE_MS = 30_000;
  const IDLE_FOR_MS = 6_500;
  const { conns, port, path } = await idleCauseway(t, LONG_IDLE_MS);
  const h1 = new RawH1(port);
  conns.push(h1);
  await h1.connected();
  const h2 = await h2c(port);
  conns.push(h2);
  const echo = (id: string) => toolCall('echo', { text: id }, id);

  const [a1, a2] = await Promise.all([
    h1.request(port, echo('long-h1-1').body, echo('long-h1-1').headers),
    h2Post(h2.session, path, echo('long-h2-1').headers, echo('long-h2-1').body),
  ]);
  t.equal(firstText({ json: parseJson(a1.text) }), 'long-h1-1', 'h1: first answer');
  t.equal(firstText(a2), 'long-h2-1', 'h2c: first answer');
  await sleep(IDLE_FOR_MS); // negative check: neither is closed for idling less than idleTimeoutMs
  t.equal(h1.closedAt, undefined, `h1: still open after ${IDLE_FOR_MS} ms idle (idleTimeoutMs ${LONG_IDLE_MS})`);
  t.equal(h2.closedAt, undefined, `h2c: still open after ${IDLE_FOR_MS} ms idle (${h2.how ?? 'open'})`);
  const [b1, b2] = await Promise.all([
    h1.request(port, echo('long-h1-2').body, echo('long-h1-2').headers),
    h2Post(h2.session, path, echo('long-h2-2').headers, echo('long-h2-2').body),
  ]);
  t.equal(
    firstText({ json: parseJson(b1.text) }),
    'long-h1-2',
    'h1: a second request on the same connection is answered',
  );
  t.equal(firstText(b2), 'long-h2-2', 'h2c: a second stream on the same session is answered');
});
