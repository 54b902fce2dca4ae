// The request fuzzer's sender and oracle, shared by test/ingress/fuzz.test.ts and bench/fuzz.ts.
// Each case goes on a fresh connection (node:http through test/e2e/wire.ts `send`, or raw bytes
// on a socket) with a generous timeout; its answer is judged against what holds for every
// answer, whatever the case:
// - an answer comes (no hang, no reset without a status), and its status is not a server fault:
//   2xx, 4xx or 503 (501 / 505 as well for raw bytes: unknown transfer coding, HTTP version);
// - a 2xx is a valid JSON-RPC 2.0 response (JSON or each SSE `data:` message), a 202/204 empty;
// - an error status has an empty body or a JSON-RPC error: jsonrpc "2.0", exactly one of
//   result/error, error.code an integer, error.message a string;
// - a JSON-RPC error echoes the request's id when it was readable (a string or an integer at the
//   top of a JSON object), else has no id: the MCP schema types it `id?: RequestId`, and null is
//   no RequestId [BASE] (the SDK 1.x upstream's own errors, relayed on legacy traffic, carry null);
// - no stack trace in any body; where the spec pins a status for the case (Host, Origin, GET /
//   DELETE without session, a body that is not JSON, a batch), that status.
// Answers Causeway had to give before reading the body (403, 405, 408, 413, 415, 431, a
// malformed Host) may lack a readable id; so may transport errors the legacy passthrough relays
// from the upstream unchanged (an SDK 1.x 404 "Session not found" has id null).

import net from 'node:net';
import { send } from '../e2e/wire.js';
import { sseMessages } from '../helpers/sse.js';
import { describeCase, makeCase, MAX_FUZZ_BODY, requestIdOf, type FuzzCase, type FuzzContext } from './fuzz-cases.js';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  ms: number;
}

export type Outcome = { answer: Answer } | { error: string; ms: number };

export interface Target {
  /** The MCP endpoint, e.g. http://127.0.0.1:PORT/mcp. */
  url: string;
  port: number;
}

/** Raw bytes on a fresh socket; resolves with the first final response, or rejects. */
function rawSend(port: number, bytes: Buffer, timeoutMs: number): Promise<Answer> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      fn();
    };
    const timer = setTimeout(() => finish(() => reject(new Error(`no answer within ${timeoutMs} ms`))), timeoutMs);
    const tryParse = (closed: boolean) => {
      const res = parseRawResponse(buf, closed);
      if (res) finish(() => resolve({ ...res, ms: Date.now() - started }));
      else if (closed)
        finish(() =>
          reject(
            new Error(
              buf.length === 0
                ? 'connection closed without a response'
                : `unparsable response: ${JSON.stringify(buf.subarray(0, 200).toString('latin1'))}`,
            ),
          ),
        );
    };
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      tryParse(false);
    });
    socket.on('end', () => tryParse(true));
    socket.on('close', () => tryParse(true));
    socket.on('error', (err) => {
      if (buf.length > 0) tryParse(true);
      else finish(() => reject(err));
    });
  });
}

/** The first final (non-1xx) HTTP/1.x response in `buf`, once it is complete; undefined before. */
export function parseRawResponse(buf: Buffer, closed: boolean): Omit<Answer, 'ms'> | undefined {
  let off = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', off);
    if (end < 0) return undefined;
    const head = buf.subarray(off, end).toString('latin1');
    const [statusLine, ...lines] = head.split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
    if (!m) return closed ? { status: 0, headers: {}, text: head } : undefined;
    const status = Number(m[1]);
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const c = l.indexOf(':');
      if (c > 0) headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
    }
    const bodyStart = end + 4;
    if (status >= 100 && status < 200) {
      off = bodyStart;
      continue;
    }
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const chunks: Buffer[] = [];
      let p = bodyStart;
      for (;;) {
        const nl = buf.indexOf('\r\n', p);
        if (nl < 0) return closed ? { status, headers, text: Buffer.concat(chunks).toString('utf8') } : undefined;
        const size = Number.parseInt(buf.subarray(p, nl).toString('latin1'), 16);
        if (!Number.isFinite(size)) return { status, headers, text: Buffer.concat(chunks).toString('utf8') };
        if (size === 0) return { status, headers, text: Buffer.concat(chunks).toString('utf8') };
        if (buf.length < nl + 2 + size + 2)
          return closed ? { status, headers, text: Buffer.concat(chunks).toString('utf8') } : undefined;
        chunks.push(buf.subarray(nl + 2, nl + 2 + size));
        p = nl + 2 + size + 2;
      }
    }
    const length = headers['content-length'];
    if (length !== undefined) {
      const n = Number(length);
      if (buf.length < bodyStart + n)
        return closed ? { status, headers, text: buf.subarray(bodyStart).toString('utf8') } : undefined;
      return { status, headers, text: buf.subarray(bodyStart, bodyStart + n).toString('utf8') };
    }
    // No framing: the body runs to the close (or there is none, e.g. 204/304).
    if (status === 204 || status === 304) return { status, headers, text: '' };
    return closed ? { status, headers, text: buf.subarray(bodyStart).toString('utf8') } : undefined;
  }
}

/** Sends one case; never throws. */
export async function deliver(target: Target, c: FuzzCase, timeoutMs: number): Promise<Outcome> {
  const started = Date.now();
  try {
    if (c.transport === 'raw') return { answer: await rawSend(target.port, c.raw!, timeoutMs) };
    const res = await send(target.url, {
      method: c.method,
      path: c.path,
      headers: c.headers,
      body: c.body,
      chunked: c.chunked,
      timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { answer: { status: res.status, headers: res.headers, text: res.text, ms: res.ms } };
  } catch (err) {
    return {
      error: `${(err as NodeJS.ErrnoException).code ?? ''} ${(err as Error).message}`.trim(),
      ms: Date.now() - started,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// The oracle.

export interface Violation {
  /** Short and stable: violations are grouped by it. */
  rule: string;
  detail: string;
}

type Id = string | number;

/** The id a server could read from the body, and whether reading it is a judgment call. */
interface ReadId {
  /** undefined: not readable. */
  id: Id | undefined;
  /** Another id a lenient reader (invalid UTF-8 replaced, BOM skipped) would find. */
  alt: Id | undefined;
}

function idOf(text: string): Id | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const id = (parsed as { id?: unknown }).id;
  if (typeof id === 'string') return id;
  if (typeof id === 'number' && Number.isInteger(id)) return id;
  return undefined;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function readId(c: FuzzCase): ReadId {
  if (c.method !== 'POST' || c.body === undefined) return { id: undefined, alt: undefined };
  // Raw cases: the framing may cut or hide the body, so any id it has is only a possibility.
  if (c.transport === 'raw') return { id: undefined, alt: idOf(c.body.toString('utf8')) };
  let strict: string | undefined;
  try {
    strict = STRICT_UTF8.decode(c.body);
  } catch {
    strict = undefined;
  }
  if (strict === undefined) return { id: undefined, alt: idOf(c.body.toString('utf8')) };
  if (strict.startsWith('\ufeff')) return { id: undefined, alt: idOf(strict.slice(1)) };
  return { id: idOf(strict), alt: undefined };
}

const PRE_BODY = new Set([403, 405, 408, 413, 415, 431, 503]);

function mayLackId(c: FuzzCase, status: number): boolean {
  if (PRE_BODY.has(status)) return true;
  if (status === 404 && c.path.split('?')[0] !== '/mcp') return true;
  if (status === 400 && c.hostFault) return true;
  return c.legacy && status >= 400;
}

function lower(headers: Answer['headers'], name: string): string {
  const v = headers[name];
  return (Array.isArray(v) ? v.join(', ') : (v ?? '')).toLowerCase();
}

/** Problems with one JSON-RPC message a server sent; `asError` when the HTTP status is an error. */
function rpcProblems(
  msg: unknown,
  c: FuzzCase,
  status: number,
  rid: ReadId,
  out: Violation[],
  where: string,
): 'response' | 'notification' | 'request' | 'invalid' {
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) {
    out.push({ rule: 'rpc-not-an-object', detail: `${where}: ${JSON.stringify(msg)?.slice(0, 200)}` });
    return 'invalid';
  }
  const m = msg as Record<string, unknown>;
  if (m.jsonrpc !== '2.0')
    out.push({ rule: 'rpc-jsonrpc-not-2.0', detail: `${where}: jsonrpc=${JSON.stringify(m.jsonrpc)}` });
  const hasResult = 'result' in m;
  const hasError = 'error' in m;
  if (!hasResult && !hasError) {
    if (typeof m.method !== 'string') {
      out.push({ rule: 'rpc-neither-result-nor-error', detail: `${where}: keys ${Object.keys(m).join(',')}` });
      return 'invalid';
    }
    return 'id' in m ? 'request' : 'notification';
  }
  if (hasResult && hasError) out.push({ rule: 'rpc-both-result-and-error', detail: where });
  if (hasError) {
    const e = m.error as { code?: unknown; message?: unknown } | null;
    if (typeof e !== 'object' || e === null)
      out.push({ rule: 'rpc-error-not-an-object', detail: `${where}: ${JSON.stringify(e)}` });
    else {
      if (!Number.isInteger(e.code))
        out.push({ rule: 'rpc-error-code-not-integer', detail: `${where}: code=${JSON.stringify(e.code)}` });
      if (typeof e.message !== 'string')
        out.push({ rule: 'rpc-error-message-not-string', detail: `${where}: message=${JSON.stringify(e.message)}` });
      if (!c.legacy && (e.code === -32002 || e.code === -32042))
        out.push({ rule: 'rpc-never-emit-code', detail: `${where}: code ${e.code} must not reach a modern client` });
    }
  }
  // The id.
  const has = 'id' in m;
  const got = m.id;
  const want = rid.id;
  if (hasResult && !hasError) {
    if (want === undefined) {
      if (!(rid.alt !== undefined && got === rid.alt))
        out.push({ rule: 'result-for-unreadable-id', detail: `${where}: id=${JSON.stringify(got)}` });
    } else if (got !== want)
      out.push({
        rule: 'result-id-not-echoed',
        detail: `${where}: sent ${JSON.stringify(want)?.slice(0, 60)}, got ${JSON.stringify(got)?.slice(0, 60)}`,
      });
    if (!c.legacy) {
      const rt = (m.result as { resultType?: unknown } | null)?.resultType;
      if (typeof rt !== 'string')
        out.push({ rule: 'modern-result-without-resultType', detail: `${where}: resultType=${JSON.stringify(rt)}` });
    }
    return 'response';
  }
  if (want !== undefined) {
    if (got === want) return 'response';
    if (mayLackId(c, status) && (!has || got === null)) return 'response';
    if (!has)
      out.push({
        rule: 'error-id-absent',
        detail: `${where}: sent id ${JSON.stringify(want)?.slice(0, 60)}, the error has no "id"`,
      });
    else
      out.push({
        rule: 'error-id-not-echoed',
        detail: `${where}: sent ${JSON.stringify(want)?.slice(0, 60)}, got ${JSON.stringify(got)?.slice(0, 60)}`,
      });
    return 'response';
  }
  if (rid.alt !== undefined && got === rid.alt) return 'response';
  if (has && !(got === null && c.legacy)) {
    out.push({
      rule: 'error-id-for-unreadable-id',
      detail: `${where}: the id could not be read, so the error has none; got ${JSON.stringify(got)?.slice(0, 60)}`,
    });
  }
  return 'response';
}

const SERVER_FAULTS_RAW_OK = new Set([501, 505]);

export function judge(c: FuzzCase, outcome: Outcome): Violation[] {
  const out: Violation[] = [];
  if ('error' in outcome) {
    out.push({
      rule: /no answer within|abort|timeout/i.test(outcome.error) ? 'no-answer(timeout)' : 'no-answer',
      detail: `${outcome.error} after ${outcome.ms} ms`,
    });
    return out;
  }
  const a = outcome.answer;
  const { status } = a;
  if (!Number.isInteger(status) || status < 100)
    out.push({ rule: 'no-status', detail: `status ${status}: ${JSON.stringify(a.text.slice(0, 200))}` });
  else if (status === 500) out.push({ rule: 'status-500', detail: a.text.slice(0, 300) });
  else if (status >= 500 && status !== 503 && !(c.transport === 'raw' && SERVER_FAULTS_RAW_OK.has(status))) {
    out.push({
      rule: `status-${status}`,
      detail: `a client fault answered as a server fault: ${a.text.slice(0, 300)}`,
    });
  } else if (status < 200 || (status >= 300 && status < 400))
    out.push({ rule: `status-${status}`, detail: a.text.slice(0, 200) });
  if (c.expect && status !== c.expect.status)
    out.push({ rule: `expected-${c.expect.status}`, detail: `got ${status}: ${c.expect.why}` });
  if (a.text.includes('    at ') || /\bat [\w.<>]+ \(\/.*:\d+:\d+\)/.test(a.text))
    out.push({ rule: 'stack-in-body', detail: a.text.slice(0, 300) });

  const rid = readId(c);
  const ct = lower(a.headers, 'content-type');
  if (!c.legacy && lower(a.headers, 'mcp-session-id') !== '' && status < 300)
    out.push({ rule: 'modern-answer-with-session-id', detail: lower(a.headers, 'mcp-session-id') });
  if (c.method === 'HEAD') return out;

  if (status === 202 || status === 204) {
    if (a.text !== '') out.push({ rule: `body-on-${status}`, detail: a.text.slice(0, 200) });
    return out;
  }
  if (status >= 200 && status < 300) {
    if (ct.startsWith('text/event-stream')) {
      const msgs = sseMessages(a.text, { invalid: 'undefined' });
      let responses = 0;
      msgs.forEach((msg, i) => {
        if (msg === undefined) {
          out.push({ rule: 'sse-data-not-json', detail: `message ${i}` });
          return;
        }
        const kind = rpcProblems(msg, c, status, rid, out, `SSE message ${i}`);
        if (kind === 'response') responses++;
        if (kind === 'request' && !c.legacy)
          out.push({ rule: 'modern-sse-carries-a-request', detail: JSON.stringify(msg).slice(0, 200) });
      });
      if (!c.legacy && responses !== 1)
        out.push({ rule: 'modern-sse-not-one-response', detail: `${responses} responses in ${msgs.length} messages` });
      if (c.legacy && responses > 1)
        out.push({ rule: 'legacy-sse-several-responses', detail: `${responses} responses` });
      return out;
    }
    if (!ct.startsWith('application/json')) {
      out.push({
        rule: 'success-not-json-or-sse',
        detail: `content-type ${JSON.stringify(ct)}: ${JSON.stringify(a.text.slice(0, 200))}`,
      });
      return out;
    }
    let body: unknown;
    try {
      body = JSON.parse(a.text);
    } catch {
      out.push({ rule: 'success-body-not-json', detail: JSON.stringify(a.text.slice(0, 200)) });
      return out;
    }
    const kind = rpcProblems(body, c, status, rid, out, 'body');
    if (kind !== 'response' && kind !== 'invalid')
      out.push({ rule: 'success-not-a-response', detail: JSON.stringify(body).slice(0, 200) });
    return out;
  }
  // An error status: empty, or a JSON-RPC error.
  if (a.text === '') return out;
  let body: unknown;
  try {
    body = JSON.parse(a.text);
  } catch {
    out.push({
      rule: 'error-body-not-json',
      detail: `content-type ${JSON.stringify(ct)}: ${JSON.stringify(a.text.slice(0, 200))}`,
    });
    return out;
  }
  const before = out.length;
  const kind = rpcProblems(body, c, status, rid, out, 'error body');
  if (kind !== 'invalid' && out.length === before && !(typeof body === 'object' && body !== null && 'error' in body)) {
    out.push({ rule: 'error-status-without-rpc-error', detail: JSON.stringify(body).slice(0, 200) });
  }
  if (c.expect?.code !== undefined) {
    const code = (body as { error?: { code?: unknown } }).error?.code;
    if (code !== c.expect.code)
      out.push({ rule: `expected-code-${c.expect.code}`, detail: `got ${JSON.stringify(code)}: ${c.expect.why}` });
  }
  return out;
}

/**
 * Expectations that hold for a modern-bound POST whatever else is wrong with it: a body that is
 * not JSON is 400 -32700, a JSON array is 400 (batching is gone) [BASE][SHTTP; test/e2e/errors.test.ts].
 */
export function addBodyExpectation(c: FuzzCase): void {
  if (c.expect || c.transport !== 'http' || c.method !== 'POST' || c.legacy || c.path !== '/mcp') return;
  const h = c.headers;
  if (h.origin !== undefined || h['mcp-session-id'] !== undefined) return;
  const ct = h['content-type'];
  if (ct !== undefined && !/^application\/json(\s*;|\s*$)/i.test(ct.trim())) return;
  const body = c.body ?? Buffer.alloc(0);
  if (body.length > MAX_FUZZ_BODY) return;
  let text: string;
  try {
    text = STRICT_UTF8.decode(body);
  } catch {
    return;
  }
  if (text.startsWith('\ufeff')) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    c.expect = { status: 400, code: -32700, why: 'a body that is not JSON => 400 -32700 Parse error' };
    return;
  }
  if (Array.isArray(parsed)) c.expect = { status: 400, why: 'a JSON array (batch) => 400: batching is gone [BASE]' };
}

// ---------------------------------------------------------------------------------------------
// Logs: nothing at error level with a stack for what is a client's fault.

export interface LogFinding {
  line: string;
  reqId: string | undefined;
}

export function errorLogsWithStack(lines: readonly string[]): LogFinding[] {
  const found: LogFinding[] = [];
  for (const line of lines) {
    let j: { level?: unknown; reqId?: unknown };
    try {
      j = JSON.parse(line) as { level?: unknown; reqId?: unknown };
    } catch {
      continue;
    }
    if (typeof j.level !== 'number' || j.level < 50) continue;
    if (!/"stack"|\\n\s+at /.test(line)) continue;
    found.push({ line, reqId: typeof j.reqId === 'string' ? j.reqId : undefined });
  }
  return found;
}

/** Causeway's log lines at `minLevel` or above, by reqId (a case's x-request-id). */
export function logsByRequest(lines: readonly string[], minLevel = 40): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of lines) {
    const level = /"level":(\d+)/.exec(line);
    if (level === null || Number(level[1]) < minLevel) continue;
    const req = /"reqId":"(fuzz-\d+-\d+)"/.exec(line);
    if (req === null) continue;
    const list = out.get(req[1]!) ?? [];
    list.push(line);
    out.set(req[1]!, list);
  }
  return out;
}

/** Level >= 50 lines without a stack (reported, not failed on). */
export function errorLogsWithoutStack(lines: readonly string[]): number {
  let n = 0;
  for (const line of lines) {
    try {
      const j = JSON.parse(line) as { level?: unknown };
      if (typeof j.level === 'number' && j.level >= 50 && !/"stack"|\\n\s+at /.test(line)) n++;
    } catch {
      /* not JSON */
    }
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// A legacy session through Causeway, for the in-session cases.

export async function openLegacySession(target: Target): Promise<string | undefined> {
  const host = `127.0.0.1:${target.port}`;
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', host };
  const init = await send(target.url, {
    method: 'POST',
    headers: base,
    body: {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'causeway-fuzz', version: '1.0.0' },
      },
    },
    timeoutMs: 10_000,
  });
  const sid = init.headers['mcp-session-id'];
  if (typeof sid !== 'string') return undefined;
  await send(target.url, {
    method: 'POST',
    headers: { ...base, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
    body: { jsonrpc: '2.0', method: 'notifications/initialized' },
    timeoutMs: 10_000,
  });
  return sid;
}

// ---------------------------------------------------------------------------------------------
// The run.

export interface RunOptions {
  target: Target;
  /** Probed between cases and at the end; each must answer 200. */
  healthUrls: string[];
  /** Seeds, each with its own count of cases. */
  plan: Array<{ seed: number; cases: number }>;
  /** Only these cases (replay): `seed:index`. */
  only?: Array<{ seed: number; index: number }>;
  concurrency: number;
  timeoutMs: number;
  ctx: FuzzContext;
  /** Probe health every this many cases. */
  healthEvery?: number;
  /** Stop sending after this many cases without an answer (a hang must not run for hours). */
  maxHangs?: number;
  onProgress?(done: number, total: number): void;
}

/** A failing case, kept small (the request and answer as text, cut): 100,000 cases may fail by the thousand. */
export interface CaseFailure {
  seed: number;
  index: number;
  family: string;
  requestId: string;
  violations: Violation[];
  /** describeCase() of the request. */
  request: string;
  /** The answer's status, content-type and the start of its body, or why there was none. */
  answer: string;
}

function failureOf(c: FuzzCase, outcome: Outcome, violations: Violation[]): CaseFailure {
  const answer =
    'error' in outcome
      ? `no answer: ${outcome.error}`
      : `answer: ${outcome.answer.status} ${String(outcome.answer.headers['content-type'] ?? '')} ` +
        JSON.stringify(outcome.answer.text.slice(0, 400));
  return {
    seed: c.seed,
    index: c.index,
    family: c.family,
    requestId: c.requestId,
    violations,
    request: describeCase(c, 300),
    answer,
  };
}

export interface RunSummary {
  sent: number;
  planned: number;
  ms: number;
  byFamily: Map<string, { count: number; statuses: Map<string, number> }>;
  statuses: Map<string, number>;
  failures: CaseFailure[];
  health: Array<{ afterCases: number; url: string; problem: string }>;
  aborted: string | undefined;
  slowest: { ms: number; seed: number; index: number; labels: string[] } | undefined;
}

async function probeHealth(url: string): Promise<string | undefined> {
  try {
    const res = await send(url, { method: 'GET', timeoutMs: 10_000 });
    return res.status === 200 ? undefined : `HTTP ${res.status}: ${res.text.slice(0, 200)}`;
  } catch (err) {
    return (err as Error).message;
  }
}

export async function runFuzz(opts: RunOptions): Promise<RunSummary> {
  const started = Date.now();
  const list: Array<{ seed: number; index: number }> =
    opts.only ?? opts.plan.flatMap(({ seed, cases }) => Array.from({ length: cases }, (_, index) => ({ seed, index })));
  const summary: RunSummary = {
    sent: 0,
    planned: list.length,
    ms: 0,
    byFamily: new Map(),
    statuses: new Map(),
    failures: [],
    health: [],
    aborted: undefined,
    slowest: undefined,
  };
  const healthEvery = opts.healthEvery ?? 250;
  const maxHangs = opts.maxHangs ?? 20;
  let next = 0;
  let hangs = 0;
  const probes: Array<Promise<void>> = [];
  const probeAll = (afterCases: number) =>
    Promise.all(
      opts.healthUrls.map(async (url) => {
        const problem = await probeHealth(url);
        if (problem) summary.health.push({ afterCases, url, problem });
      }),
    ).then(() => undefined);

  const worker = async () => {
    for (;;) {
      if (summary.aborted) return;
      const i = next++;
      if (i >= list.length) return;
      const { seed, index } = list[i]!;
      const c = makeCase(seed, index, opts.ctx);
      addBodyExpectation(c);
      const outcome = await deliver(opts.target, c, opts.timeoutMs);
      summary.sent++;
      const statusKey = 'error' in outcome ? 'none' : String(outcome.answer.status);
      const fam = summary.byFamily.get(c.family) ?? { count: 0, statuses: new Map<string, number>() };
      fam.count++;
      fam.statuses.set(statusKey, (fam.statuses.get(statusKey) ?? 0) + 1);
      summary.byFamily.set(c.family, fam);
      summary.statuses.set(statusKey, (summary.statuses.get(statusKey) ?? 0) + 1);
      const ms = 'error' in outcome ? outcome.ms : outcome.answer.ms;
      if (!summary.slowest || ms > summary.slowest.ms)
        summary.slowest = { ms, seed: c.seed, index: c.index, labels: c.labels };
      const violations = judge(c, outcome);
      if (violations.length > 0) summary.failures.push(failureOf(c, outcome, violations));
      if (violations.some((v) => v.rule.startsWith('no-answer'))) {
        hangs++;
        if (hangs >= maxHangs) summary.aborted = `stopped after ${hangs} cases without an answer`;
      }
      if (summary.sent % healthEvery === 0) probes.push(probeAll(summary.sent));
      opts.onProgress?.(summary.sent, list.length);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, worker));
  await Promise.all(probes);
  await probeAll(summary.sent);
  summary.ms = Date.now() - started;
  return summary;
}

// ---------------------------------------------------------------------------------------------
// Reporting.

export function statusLine(m: Map<string, number>): string {
  return [...m.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([s, n]) => `${s}:${n}`)
    .join(' ');
}

export function summaryLines(s: RunSummary): string[] {
  const lines = [`${s.sent}/${s.planned} cases in ${(s.ms / 1000).toFixed(1)} s; statuses ${statusLine(s.statuses)}`];
  for (const [family, f] of [...s.byFamily.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`  ${family.padEnd(24)} ${String(f.count).padStart(6)}  ${statusLine(f.statuses)}`);
  }
  if (s.slowest)
    lines.push(
      `slowest answer ${s.slowest.ms} ms: seed=${s.slowest.seed} ` +
        `case=${s.slowest.index} [${s.slowest.labels.join(', ')}]`,
    );
  if (s.aborted) lines.push(`ABORTED: ${s.aborted}`);
  return lines;
}

export interface FailureGroup {
  rule: string;
  family: string;
  count: number;
  examples: CaseFailure[];
}

/** Violations grouped by (rule, family), with the first few cases of each. */
export function groupFailures(failures: readonly CaseFailure[], examples = 2): FailureGroup[] {
  const groups = new Map<string, FailureGroup>();
  for (const f of failures) {
    for (const rule of new Set(f.violations.map((v) => v.rule))) {
      const key = `${rule}\u0000${f.family}`;
      const g = groups.get(key) ?? { rule, family: f.family, count: 0, examples: [] };
      g.count++;
      if (g.examples.length < examples) g.examples.push(f);
      groups.set(key, g);
    }
  }
  return [...groups.values()].sort((a, b) => b.count - a.count);
}

export function describeFailure(f: CaseFailure, rule?: string, logs?: ReadonlyMap<string, string[]>): string {
  const vs = f.violations.filter((v) => rule === undefined || v.rule === rule);
  const logged = (logs?.get(f.requestId) ?? []).map((l) => `log: ${l.slice(0, 600)}`);
  return [...vs.map((v) => `${v.rule}: ${v.detail}`), f.request, f.answer, ...logged.slice(0, 2)].join('\n');
}

/** The case a log line's reqId names, if it is one of ours. */
export function caseOfReqId(reqId: string | undefined, ctx: FuzzContext): FuzzCase | undefined {
  const m = /^fuzz-(\d+)-(\d+)$/.exec(reqId ?? '');
  if (!m) return undefined;
  const c = makeCase(Number(m[1]), Number(m[2]), ctx);
  return c.requestId === requestIdOf(Number(m[1]), Number(m[2])) ? c : undefined;
}
