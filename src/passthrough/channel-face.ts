// The legacy Streamable HTTP protocol (2025-03-26 .. 2025-11-25) served by Causeway itself over an
// upstream whose sessions are channels (stdio, HTTP+SSE): each legacy client session is its own
// upstream session, opened with the client's own initialize [L-LIFE] (channel-sessions.ts keeps
// them). A request is answered as SSE when the client accepts it (its progress, log lines and the
// server's asks routed to it, then its response) or else as JSON; notifications and answers to
// asks get 202; GET is the session's stream of messages that belong to no call; DELETE ends the
// session [L-TR]. Client ids go upstream unchanged: nobody else uses the session. A list's
// response is filtered to what the request's token may call. With the gateway cache on, the
// lists and reads are kept as a Streamable HTTP upstream's are (the upstream's cache.* policy; a
// private answer for the legacy session it was read on): answered again as JSON without asking
// the child, and dropped by a change notification the session's streams carry.

import type { IncomingHttpHeaders } from 'node:http';
import { errorBody, sendCausewayError, sendJson, sendStatus, SseStream, type HttpResponse } from '../egress/index.js';
import { CausewayError, causewayError, toCausewayError } from '../errors.js';
import {
  isNotification,
  isObject,
  isRequest,
  isResponse,
  type JsonRpcMessage,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { isCacheable, type UpstreamCache } from '../cache/index.js';
import type { CacheScope } from '../metrics/index.js';
import type { JsonRpcNotification } from '../jsonrpc.js';
import { SessionExpiredError, type UpstreamSessionClient } from '../upstream/index.js';
import { LegacySessions, type LegacySession } from './channel-sessions.js';
import {
  acceptsSse,
  keepAlive,
  readInitializeParams,
  readLegacyMessage,
  sessionGone,
  type LegacyFace,
  type LegacyRequest,
} from './legacy-face.js';
import type { SessionBinding } from './session-binding.js';

export interface ChannelFaceOptions {
  client: UpstreamSessionClient;
  /** Binds handed-out session ids to their principal; undefined when neither principal.mode nor auth.mode is set. */
  binding: SessionBinding | undefined;
  /** A legacy session unused this long is ended. */
  idleTtlMs: number;
  /** Interval of `:` keep-alive comments on SSE answers and GET streams; 0 sends none. */
  keepAliveMs: number;
  /** The upstream's gateway cache and its cache.* policy, when the cache is on. */
  cache?: { cache: UpstreamCache; hint(method: string): { ttlMs: number; cacheScope: CacheScope } };
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return typeof v === 'string' ? v : undefined;
}

export class ChannelLegacyFace implements LegacyFace {
  private readonly sessions: LegacySessions;

  constructor(
    private readonly opts: ChannelFaceOptions,
    private readonly log: Logger,
  ) {
    this.sessions = new LegacySessions(opts.client, opts.binding, opts.idleTtlMs, log);
  }

  async forward(req: LegacyRequest): Promise<void> {
    const { method, headers, body, res, signal, principal } = req;
    let id: RequestId | null = null;
    let session: LegacySession | undefined;
    try {
      const message = method === 'POST' ? readLegacyMessage(body) : undefined;
      if (message !== undefined && isRequest(message)) id = message.id;
      const clientId = header(headers, 'mcp-session-id');
      if (message !== undefined && isRequest(message) && message.method === 'initialize') {
        if (clientId !== undefined)
          throw causewayError('invalid_request', 'initialize opens a new session: send it without Mcp-Session-Id');
        return await this.initialize(message, principal, res, signal);
      }
      if (clientId === undefined)
        throw causewayError('invalid_request', 'Mcp-Session-Id is required: send initialize first');
      session = this.sessions.find(clientId, principal);
      if (session === undefined) return sessionGone(res, id);
      if (method === 'GET') return await this.listen(session, headers, res, signal);
      if (method === 'DELETE') {
        await this.sessions.end(session);
        return sendStatus(res, 200);
      }
      if (message === undefined) throw causewayError('method_not_allowed');
      return await this.post(session, message, req);
    } catch (err) {
      if (err instanceof SessionExpiredError && session) this.sessions.forget(session);
      if (!signal.aborted) this.refuse(res, err, id);
    }
  }

  /** Ends the GET streams, so a drain need not wait for their clients to leave. */
  endStreams(): void {
    this.sessions.endStreams();
  }

  async close(): Promise<void> {
    await this.sessions.close();
  }

  private async initialize(
    msg: JsonRpcRequest,
    principal: string,
    res: HttpResponse,
    signal: AbortSignal,
  ): Promise<void> {
    // The upstream gets the client's own handshake; its notifications/initialized is sent here.
    const opened = await this.opts.client.initialize(readInitializeParams(msg.params), signal);
    const ref = { sessionId: opened.sessionId, protocolVersion: opened.protocolVersion, target: opened.target };
    if (signal.aborted) {
      void this.opts.client.terminate(ref);
      return;
    }
    const clientId = this.sessions.add(ref, principal);
    this.log.debug({ protocolVersion: ref.protocolVersion, sessions: this.sessions.size }, 'legacy session opened');
    sendJson(res, 200, { jsonrpc: '2.0', id: msg.id, result: opened.initializeResult }, { 'mcp-session-id': clientId });
  }

  private async post(session: LegacySession, message: JsonRpcMessage, req: LegacyRequest): Promise<void> {
    const { client } = this.opts;
    if (isRequest(message)) return this.sessions.use(session, () => this.call(session, message, req));
    // The client's notifications/initialized: the upstream had one already, at initialize.
    if (isNotification(message) && message.method !== 'notifications/initialized')
      await client.notify(session.ref, message);
    else if (isResponse(message)) await client.respond(session.ref, message);
    sendStatus(req.res, 202);
  }

  private async call(session: LegacySession, msg: JsonRpcRequest, req: LegacyRequest): Promise<void> {
    const { headers, res, signal, access } = req;
    const { client } = this.opts;
    const seen = (response: JsonRpcResponse): JsonRpcResponse =>
      access?.mayHide(msg.method) && 'result' in response
        ? { ...response, result: access.filterList(msg.method, response.result) }
        : response;
    const heard = (n: JsonRpcNotification): void => this.opts.cache?.cache.changed(n);
    try {
      const params = isObject(msg.params) ? msg.params : {};
      const kept = this.opts.cache && session.ref.sessionId !== undefined && isCacheable(msg.method, params);
      if (kept) {
        const ask = () => client.request(session.ref, msg, { onNotification: heard }, signal);
        sendJson(res, 200, seen(await this.throughCache(session, msg, headers, ask)));
        return;
      }
      if (!acceptsSse(headers)) {
        sendJson(res, 200, seen(await client.request(session.ref, msg, {}, signal)));
        return;
      }
      const stream = new SseStream(res);
      const stopKeepAlive = keepAlive(stream, this.opts.keepAliveMs);
      try {
        const onNotification = (n: JsonRpcNotification) => {
          heard(n);
          stream.send(n);
        };
        const onServerRequest = (r: JsonRpcRequest) => stream.send(r);
        const response = await client.request(session.ref, msg, { onNotification, onServerRequest }, signal);
        stream.end(seen(response));
      } finally {
        stopKeepAlive();
      }
    } catch (err) {
      // Causeway gave up waiting, the upstream did not: tell it, as the client would have [L-CANCEL].
      if (err instanceof CausewayError && err.reason === 'upstream_timeout') {
        void client
          .notify(session.ref, {
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: msg.id, reason: err.message },
          })
          .catch(() => {});
      }
      throw err;
    }
  }

  /** The session's stream of messages that belong to no call; a second GET replaces the first. */
  private async listen(
    session: LegacySession,
    headers: IncomingHttpHeaders,
    res: HttpResponse,
    signal: AbortSignal,
  ): Promise<void> {
    if (!acceptsSse(headers)) throw causewayError('not_acceptable', 'A GET stream needs Accept: text/event-stream');
    session.endStream?.();
    const ended = new AbortController();
    const end = (): void => ended.abort();
    session.endStream = end;
    const stream = new SseStream(res);
    try {
      await this.sessions.use(session, async () => {
        const onNotification = (n: JsonRpcNotification) => {
          this.opts.cache?.cache.changed(n);
          stream.send(n);
        };
        const until = AbortSignal.any([signal, ended.signal]);
        const opened = await this.opts.client.openStream(session.ref, { onNotification }, until);
        if (opened === 'unsupported') throw causewayError('method_not_allowed', 'This upstream offers no GET stream');
        stream.start();
        const stopKeepAlive = keepAlive(stream, this.opts.keepAliveMs);
        try {
          await opened.done;
        } finally {
          stopKeepAlive();
        }
      });
    } catch (err) {
      if (!res.headersSent) throw err;
      if (err instanceof SessionExpiredError) this.sessions.forget(session);
    } finally {
      if (session.endStream === end) session.endStream = undefined;
      if (res.headersSent) stream.end();
    }
  }

  /**
   * A cacheable request's answer: kept, or asked of the session and kept as the policy says. A
   * private answer is the legacy session's alone (and the token's); the session's stream is not
   * taken as held, so the policy's ttlMs is all an answer is kept for.
   */
  private async throughCache(
    session: LegacySession,
    msg: JsonRpcRequest,
    headers: IncomingHttpHeaders,
    ask: () => Promise<JsonRpcResponse>,
  ): Promise<JsonRpcResponse> {
    const { cache, hint } = this.opts.cache!;
    const policy = hint(msg.method);
    // The upstream session's own id: the legacy session a private answer was read on.
    const sessionId = session.ref.sessionId!;
    const who = policy.cacheScope === 'public' ? '' : sessionId;
    const q = cache.query(msg.method, isObject(msg.params) ? msg.params : {}, who, header(headers, 'authorization'));
    return cache.through(
      q,
      policy.cacheScope,
      (e): JsonRpcResponse => {
        // A legacy answer carries no ttlMs.
        const { ttlMs: _ttl, ...result } = cache.result(e);
        void _ttl;
        return { jsonrpc: '2.0', id: msg.id, result };
      },
      async (fill) => {
        const response = await ask();
        if ('result' in response) {
          const kept = { capabilities: undefined, streamHeld: false, id: sessionId };
          cache.keepLegacy(q, fill, response.result, policy, kept);
        }
        return response;
      },
    );
  }

  /** Answers with the error: on the SSE stream when one was started, else as JSON with its status. */
  private refuse(res: HttpResponse, err: unknown, id: RequestId | null): void {
    const e =
      err instanceof SessionExpiredError ? causewayError('not_found', 'Session not found') : toCausewayError(err);
    if (!(err instanceof CausewayError || err instanceof SessionExpiredError))
      this.log.error({ err }, 'legacy request failed');
    else if (e.status >= 500) {
      this.log.warn({ reason: e.reason, message: e.message, err: e.cause }, 'legacy request failed');
    }
    if (res.headersSent) new SseStream(res).end(errorBody(id, { code: e.code, message: e.message }));
    else sendCausewayError(res, e, id);
  }
}
