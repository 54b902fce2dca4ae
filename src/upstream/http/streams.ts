// The SSE side of legacy Streamable HTTP: following a request's stream to its response, resuming a
// dropped one with GET + Last-Event-ID after `retry:` [L-TR][SEP-1699], and keeping the
// standalone GET stream of a session up until its signal aborts. Each stream is read by
// reader.ts.

import { CausewayError } from '../../errors.js';
import type { JsonRpcResponse } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { discard, mediaType, readRefusal } from './body.js';
import type { CallScope } from './call-scope.js';
import {
  isConnectionDrop,
  losesSession,
  REFUSAL_BODY_LIMIT,
  ResumeRefusedError,
  SessionExpiredError,
  type SessionRef,
  type TargetSet,
} from '../core/index.js';
import { badResponse, type Cursor, type Exchange, type Inbound } from './inbound.js';
import { consume, type Outcome } from './reader.js';
import { httpRefusal, LONG_LIVED, MOVABLE, refusalOf, type Response, type UpstreamDispatcher } from './dispatcher.js';

/** A standalone stream that lived this long counts as healthy even if it carried no event. */
const STREAM_HEALTHY_MS = 5000;

export interface StreamTuning {
  maxEventBytes: number;
  defaultRetryMs: number;
  maxRetryMs: number;
  maxResumeAttempts: number;
}

/** What a session's exchanges and streams need of the client (legacy-client.ts). */
export interface StreamContext {
  upstream: string;
  targets: TargetSet;
  dispatcher: UpstreamDispatcher;
  io: Inbound;
  log: Logger;
  maxResponseBytes: number;
  /** The largest SSE event (tuning's): a request's stream is also held to maxResponseBytes. */
  maxEventBytes: number;
  tuning: StreamTuning;
}

function retryDelay(c: StreamContext, cursor: Cursor): number {
  return Math.min(cursor.retryMs ?? c.tuning.defaultRetryMs, c.tuning.maxRetryMs);
}

/** Request streams are held to maxResponseBytes per HTTP response; standalone ones per event. */
function read(c: StreamContext, ctx: Exchange, res: Response, cursor: Cursor): Promise<Outcome> {
  const max = c.maxResponseBytes;
  return consume(c.io, ctx, res.body, cursor, {
    maxEventBytes: ctx.lenient ? c.tuning.maxEventBytes : Math.min(c.tuning.maxEventBytes, max),
    maxBodyBytes: ctx.lenient ? undefined : max,
  });
}

/**
 * [L-TR] Takes up a call's stream from `lastEventId` (GET + Last-Event-ID), e.g. on a replica
 * that did not send the call, and reads it to the call's response as exchange() reads a POST's. The
 * first GET: a lost session (404, or a 400 that names it) is a SessionExpiredError; 409 (the
 * stream is attached elsewhere, perhaps to a connection the upstream has not yet seen close) is
 * tried again after the retry delay; any other refusal is a ResumeRefusedError. Nothing of the
 * stream was read in those cases.
 */
export async function resumeRequestStream(
  c: StreamContext,
  ctx: Exchange,
  lastEventId: string,
): Promise<JsonRpcResponse> {
  const cursor: Cursor = { lastEventId, retryMs: undefined };
  for (let attempt = 1; ; attempt++) {
    const headers = c.dispatcher.headers('get', ctx.session, undefined, lastEventId);
    const res = await c.dispatcher.send('GET', ctx.session, headers, undefined, ctx.scope.signal, LONG_LIVED);
    const status = res.statusCode;
    if (status === 200 && mediaType(res.headers['content-type']) === 'text/event-stream') {
      return follow(c, ctx, cursor, await read(c, ctx, res, cursor));
    }
    if (await lostSession(ctx.session, res)) throw new SessionExpiredError(c.upstream);
    void discard(res.body);
    if (status !== 409 || attempt >= c.tuning.maxResumeAttempts) throw new ResumeRefusedError(c.upstream, status);
    await ctx.scope.sleep(retryDelay(c, cursor));
  }
}

/** [L-TR] SEP-1699: the upstream may close after an event id; resumed with GET + Last-Event-ID. */
export async function follow(
  c: StreamContext,
  ctx: Exchange,
  cursor: Cursor,
  first: Outcome,
): Promise<JsonRpcResponse> {
  let outcome = first;
  let attempts = 0;
  let lastError: unknown;
  while (!('response' in outcome)) {
    if ('dropped' in outcome) lastError = outcome.dropped;
    if (cursor.lastEventId === undefined || cursor.lastEventId === '') {
      if ('dropped' in outcome) throw outcome.dropped;
      throw badResponse('SSE stream ended without a response');
    }
    if (outcome.events > 0) attempts = 0;
    attempts += 1;
    if (attempts > c.tuning.maxResumeAttempts) {
      throw new CausewayError('upstream_unavailable', 'Upstream SSE stream could not be resumed', undefined, {
        cause: lastError,
      });
    }
    const delayMs = retryDelay(c, cursor);
    c.log.debug({ attempt: attempts, delayMs }, 'resuming upstream SSE stream');
    await ctx.scope.sleep(delayMs);
    outcome = await resume(c, ctx, cursor);
  }
  return outcome.response;
}

async function resume(c: StreamContext, ctx: Exchange, cursor: Cursor): Promise<Outcome> {
  let res: Response;
  try {
    const headers = c.dispatcher.headers('get', ctx.session, undefined, cursor.lastEventId);
    res = await c.dispatcher.send(
      'GET',
      ctx.session,
      headers,
      undefined,
      ctx.scope.signal,
      ctx.patient === true ? LONG_LIVED : 0,
    );
  } catch (err) {
    if (ctx.scope.aborted || !isConnectionDrop(err)) throw err;
    return { dropped: err, events: 0 };
  }
  const status = res.statusCode;
  if (await lostSession(ctx.session, res)) {
    // The call may have run before the session went away: never let the pool replay it.
    throw new CausewayError(
      'upstream_unavailable',
      'Upstream session ended while the call was running; its outcome is unknown',
    );
  }
  if (status >= 500) {
    void discard(res.body);
    return { dropped: httpRefusal(status), events: 0 };
  }
  if (status !== 200) throw await refusalOf(res);
  if (mediaType(res.headers['content-type']) !== 'text/event-stream') {
    void discard(res.body);
    throw badResponse('resumed stream is not text/event-stream');
  }
  return read(c, ctx, res, cursor);
}

/** Opens (or re-opens) a session's standalone GET stream; 'unsupported' when the upstream has none (405). */
export async function connectStream(
  c: StreamContext,
  session: SessionRef,
  cursor: Cursor,
  scope: CallScope,
): Promise<Response | 'unsupported'> {
  const lastEventId = cursor.lastEventId === '' ? undefined : cursor.lastEventId;
  const headers = c.dispatcher.headers('get', session, undefined, lastEventId);
  const res = await c.dispatcher.send('GET', session, headers, undefined, scope.signal, LONG_LIVED | MOVABLE);
  const status = res.statusCode;
  if (status === 405) {
    void discard(res.body);
    return 'unsupported';
  }
  if (await lostSession(session, res)) throw new SessionExpiredError(c.upstream);
  if (status !== 200) throw await refusalOf(res);
  if (mediaType(res.headers['content-type']) !== 'text/event-stream') {
    void discard(res.body);
    throw badResponse('GET stream is not text/event-stream');
  }
  return res;
}

/**
 * Whether a GET's 400 or 404 says the session is gone (core/lost-session.ts). A 400's body is read
 * to tell; any other answer's is left to be read.
 */
async function lostSession(session: SessionRef, res: Response): Promise<boolean> {
  const status = res.statusCode;
  if (session.sessionId === undefined || (status !== 400 && status !== 404)) return false;
  if (status === 404) {
    void discard(res.body);
    return true;
  }
  // Read either way: another refusal is then made from its status alone.
  return losesSession(status, await readRefusal(res.body, REFUSAL_BODY_LIMIT), undefined);
}

/** Keeps the standalone stream up until its signal aborts; rejects only when it cannot. */
export async function pumpStream(c: StreamContext, ctx: Exchange, first: Response, cursor: Cursor): Promise<void> {
  let res: Response | undefined = first;
  let failures = 0;
  let lastError: unknown;
  try {
    for (;;) {
      if (res !== undefined) {
        const openedAt = Date.now();
        const outcome = await read(c, ctx, res, cursor);
        if ('dropped' in outcome) {
          lastError = outcome.dropped;
          c.log.debug({ err: outcome.dropped }, 'upstream GET stream dropped');
        }
        if (!('response' in outcome) && (outcome.events > 0 || Date.now() - openedAt >= STREAM_HEALTHY_MS)) {
          failures = 0;
        }
      }
      failures += 1;
      if (failures > c.tuning.maxResumeAttempts) {
        throw new CausewayError('upstream_unavailable', 'Upstream GET stream could not be re-opened', undefined, {
          cause: lastError,
        });
      }
      await ctx.scope.sleep(retryDelay(c, cursor));
      try {
        const next = await connectStream(c, ctx.session, cursor, ctx.scope);
        if (next === 'unsupported') return;
        res = next;
      } catch (err) {
        if (ctx.scope.aborted || err instanceof SessionExpiredError) throw err;
        lastError = err;
        res = undefined;
      }
    }
  } catch (err) {
    if (ctx.scope.aborted) return;
    throw ctx.scope.settle(err);
  } finally {
    ctx.scope.dispose();
  }
}
