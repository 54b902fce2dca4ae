// The one reader of an upstream's answers (upstream/http/reader.ts), driven as undici drives a
// dispatch handler: JSON and SSE answers routed as they come, the stream's cursor kept, a stream
// that ends first, a lost session, the upstream's in-band error, a refusal and a bad answer.

import t from 'tap';
import { CausewayError } from '../../src/errors.js';
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../../src/jsonrpc.js';
import { SessionExpiredError } from '../../src/upstream/core/index.js';
import type { Controller } from '../../src/upstream/http/compose/index.js';
import type { Inbound, Routed } from '../../src/upstream/http/inbound.js';
import { AnswerReader } from '../../src/upstream/http/reader.js';
import { logSink } from './log-sink.js';

class Reader extends AnswerReader {
  answer: JsonRpcResponse | undefined;
  failure: unknown;
  ended: { dropped: unknown } | undefined;
  readonly notifications: JsonRpcNotification[] = [];
  readonly asks: JsonRpcRequest[] = [];
  readonly replies: JsonRpcResponse[] = [];
  protected readonly limits = { maxResponseBytes: 4096, maxEventBytes: 4096 };
  protected readonly io: Inbound = { log: logSink().log, reply: (_session, r) => void this.replies.push(r) };
  protected readonly ctx: Routed;

  /** `sessionId` null: a request outside a session (an initialize). */
  constructor(sessionId: string | null = 'session-1') {
    super();
    this.ctx = {
      id: 7,
      session: { sessionId: sessionId ?? undefined, protocolVersion: '2025-11-25' },
      handlers: {
        onNotification: (n) => void this.notifications.push(n),
        onServerRequest: (r) => void this.asks.push(r),
      },
    };
  }

  get cursor() {
    return { lastEventId: this.lastEventId, retryMs: this.retryMs };
  }

  protected refusedBy() {
    return { upstream: 'up', to: undefined };
  }

  protected onAnswer(response: JsonRpcResponse): void {
    this.over = true;
    this.answer = response;
  }

  protected onFailure(err: unknown): void {
    this.over = true;
    this.failure = err;
  }

  protected onStreamEnd(dropped: unknown): void {
    this.over = true;
    this.ended = { dropped };
  }
}

/** Feeds `reader` an answer as undici would; the reason it was aborted with, if it was. */
function feed(reader: Reader, status: number, type: string, ...chunks: string[]): unknown {
  let aborted: unknown;
  const controller = { abort: (reason: unknown) => void (aborted = reason) } as unknown as Controller;
  reader.onRequestStart(controller);
  reader.onResponseStart(controller, status, { 'content-type': type });
  for (const chunk of chunks) reader.onResponseData(controller, Buffer.from(chunk));
  reader.onResponseEnd(controller, {});
  return aborted;
}

function sse(data: unknown, id?: string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}

t.test('a JSON answer: its notifications routed, the response to the call read', async (t) => {
  const r = new Reader();
  const note = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } };
  const response = { jsonrpc: '2.0', id: 7, result: { content: [] } };
  const body = JSON.stringify([note, response]);
  feed(r, 200, 'application/json', body.slice(0, 10), body.slice(10));
  t.same(r.answer, response);
  t.same(r.notifications, [note]);
  t.equal(r.failure, undefined);
});

t.test('a JSON answer in one chunk, and one whose character is split between two, read whole', async (t) => {
  const response = { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'h\u00e9 \u20ac' }] } };
  const bytes = Buffer.from(JSON.stringify(response));
  const one = new Reader();
  feed(one, 200, 'application/json', bytes.toString());
  t.same(one.answer, response);
  const split = new Reader();
  const controller = { abort: () => undefined } as unknown as Controller;
  split.onRequestStart(controller);
  split.onResponseStart(controller, 200, { 'content-type': 'application/json' });
  const cut = bytes.indexOf(0xe2) + 1;
  split.onResponseData(controller, bytes.subarray(0, cut));
  split.onResponseData(controller, bytes.subarray(cut));
  split.onResponseEnd(controller, {});
  t.same(split.answer, response, 'the euro sign cut after its first byte');
});

t.test('a JSON answer in chunks that split a character: decoded chunk by chunk, not first joined', async (t) => {
  const r = new Reader();
  const response = { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'caf\u00e9 \u{1f600}' }] } };
  const bytes = Buffer.from(JSON.stringify(response));
  // Inside the two bytes of the e-acute, and inside the four of the emoji.
  const [one, two] = [bytes.indexOf(0xc3) + 1, bytes.indexOf(0xf0) + 2];
  let aborted: unknown;
  const controller = { abort: (reason: unknown) => void (aborted = reason) } as unknown as Controller;
  r.onRequestStart(controller);
  r.onResponseStart(controller, 200, { 'content-type': 'application/json' });
  for (const chunk of [bytes.subarray(0, one), bytes.subarray(one, two), bytes.subarray(two)])
    r.onResponseData(controller, chunk);
  r.onResponseEnd(controller, {});
  t.equal(aborted, undefined);
  t.same(r.answer, response);
});

t.test('an SSE answer: event by event, pings answered, asks handed on, the cursor kept', async (t) => {
  const r = new Reader();
  const ask = { jsonrpc: '2.0', id: 'a1', method: 'elicitation/create', params: {} };
  const text =
    'retry: 250\n\n' +
    sse({ jsonrpc: '2.0', id: 'p1', method: 'ping' }, 'e1') +
    sse(ask, 'e2') +
    sse({ jsonrpc: '2.0', id: 7, result: { ok: true } }, 'e3');
  feed(r, 200, 'text/event-stream', text.slice(0, 33), text.slice(33, 90), text.slice(90));
  t.same(r.answer, { jsonrpc: '2.0', id: 7, result: { ok: true } });
  t.same(r.replies, [{ jsonrpc: '2.0', id: 'p1', result: {} }], 'the ping is answered');
  t.same(r.asks, [ask], 'the ask goes to the call');
  t.same(r.cursor, { lastEventId: 'e3', retryMs: 250 });
});

t.test('a stream that ends before the response is reported, its cursor kept for the follow', async (t) => {
  const r = new Reader();
  feed(r, 200, 'text/event-stream', sse({ jsonrpc: '2.0', method: 'notifications/progress', params: {} }, 'e9'));
  t.same(r.ended, { dropped: undefined });
  t.equal(r.lastEventId, 'e9');
  t.equal(r.answer, undefined);
});

t.test('a 404 on a session, or a 400 that names it, is a lost session; without a session it is not', async (t) => {
  const notFound = new Reader();
  feed(notFound, 404, 'text/plain', 'Session not found');
  t.ok(notFound.failure instanceof SessionExpiredError);
  const named = new Reader();
  const message = 'Bad Request: No valid session ID provided';
  const error = { jsonrpc: '2.0', id: null, error: { code: -32000, message } };
  feed(named, 400, 'application/json', JSON.stringify(error));
  t.ok(named.failure instanceof SessionExpiredError);
  const none = new Reader(null);
  feed(none, 404, 'text/plain', 'Not Found');
  t.ok(none.failure instanceof CausewayError && !(none.failure instanceof SessionExpiredError));
});

t.test("a 4xx with the call's JSON-RPC error is the upstream's answer; a 500 is a refusal", async (t) => {
  const inBand = new Reader();
  const error = { jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'bad params' } };
  feed(inBand, 400, 'application/json', JSON.stringify(error));
  t.same(inBand.answer, error);
  const refused = new Reader();
  feed(refused, 500, 'application/json', JSON.stringify({ ...error, error: { code: -32603, message: 'boom' } }));
  t.ok(refused.failure instanceof CausewayError);
  t.match((refused.failure as CausewayError).message, /HTTP 500.*boom/);
});

t.test('a bad answer fails the read: a 202, another content type, too many bytes', async (t) => {
  for (const [status, type, body, said] of [
    [202, 'application/json', '', /HTTP 202/],
    [200, 'text/html', '<html>', /unexpected content-type/],
    [200, 'application/json', 'x'.repeat(5000), /exceeds 4096 bytes/],
  ] as const) {
    const r = new Reader();
    feed(r, status, type, body);
    t.ok(r.failure instanceof CausewayError, `${status} ${type}`);
    t.match((r.failure as CausewayError).message, said);
  }
});
