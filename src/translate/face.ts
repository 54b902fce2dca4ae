// The legacy Streamable HTTP protocol (2024-11-05 .. 2025-11-25) served by Causeway itself in
// front of a modern (2026-07-28) upstream. initialize is answered from the upstream's
// server/discover; the session is Causeway's own (sessions.ts). Each legacy request becomes a
// 2026 request with the session's `_meta`; an input_required answer becomes the legacy era's
// server->client requests on the call's POST stream, and the client's answers, POSTed to any
// replica (rounds.ts), become the retry's inputResponses beside the server's requestState, until
// the call completes, fails or is cancelled. Progress and log lines travel on the POST stream;
// the GET stream is fed by a subscriptions/listen (list changes, and resources/updated for the
// session's resources/subscribe); DELETE ends the session. The 2025-11-25 tasks run over the
// upstream's tasks extension when it has one (tasks.ts). Everything sent is first made what a
// legacy server would send (clean.ts): no 2026-only key reaches a legacy client.

import type { IncomingHttpHeaders } from 'node:http';
import { randomUUID } from 'node:crypto';
import { sendJson, sendStatus, type HttpResponse } from '../egress/index.js';
import { callName, type HeaderBag } from '../envelope/index.js';
import { CausewayError, causewayError } from '../errors.js';
import { InFlightByKey } from '../in-flight.js';
import {
  copyObject,
  isNotification,
  isObject,
  isRequest,
  isResponse,
  type JsonObject,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from '../jsonrpc.js';
import type { Logger } from '../log.js';
import type { ListLens } from '../view/index.js';
import { isCacheable, type UpstreamCache } from '../cache/index.js';
import { declaresTasks } from '../dialect/index.js';
import type { ForwardPolicy, ModernClient } from '../upstream/index.js';
import {
  acceptsSse,
  readInitializeParams,
  readLegacyMessage,
  sessionGone,
  type LegacyFace,
  type LegacyRequest,
} from '../passthrough/index.js';
import { legacyMessage } from './clean.js';
import type { AskRounds } from './rounds.js';
import { clientInfoOf, newSessionId, type FactsStore, type Session, type SessionRecord } from './sessions.js';
import { LegacyTasks, type TaskRequest } from './tasks.js';
import { ToolHeaders } from './tools.js';
import { bag, CallStream, refuse } from './call-stream.js';
import { GetStreams } from './get-streams.js';
import { declared, initializeResult, legacyResponse, modernRequest, negotiate, withTasks } from './wire.js';

export interface TranslatedFaceOptions {
  upstream: string;
  client: ModernClient;
  facts: FactsStore;
  rounds: AskRounds;
  forward: ForwardPolicy;
  keepAliveMs: number;
  /** input_required rounds one call may take before it is failed. */
  maxRounds: number;
  /** Called when the upstream answers with no 2026 answer: its era may have changed. */
  onRefused?(): void;
  /** The gateway cache: discover, lists and reads served again, shared with the modern clients of the upstream. */
  cache?: UpstreamCache;
}

/** The ids Causeway mints (sessions.ts): anything else names no session, and is never looked up. */
const SESSION_ID = /^[A-Za-z0-9_-]{22}$/;

const ASK_CAPABILITY: Readonly<Record<string, string>> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

export class TranslatedFace implements LegacyFace {
  /** Calls in flight here, by session and client request id: a notifications/cancelled ends one. */
  private readonly calls = new InFlightByKey<AbortController>();
  private seq = 0;
  private readonly idPrefix = randomUUID().slice(0, 8);
  private readonly tools = new ToolHeaders();
  private readonly tasks: LegacyTasks;
  private readonly getStreams: GetStreams;

  constructor(
    private readonly opts: TranslatedFaceOptions,
    private readonly log: Logger,
  ) {
    this.tasks = new LegacyTasks(opts.facts);
    this.getStreams = new GetStreams(opts, log, () => this.nextId());
  }

  async forward(req: LegacyRequest): Promise<void> {
    const { method, headers, body, res, signal, access, principal } = req;
    let id: RequestId | null = null;
    try {
      const hb = bag(headers);
      const message = method === 'POST' ? readLegacyMessage(body) : undefined;
      if (message !== undefined && isRequest(message)) id = message.id;
      const clientId = hb['mcp-session-id'];
      if (message !== undefined && isRequest(message) && message.method === 'initialize') {
        if (clientId !== undefined)
          throw causewayError('invalid_request', 'initialize opens a new session: send it without Mcp-Session-Id');
        return await this.initialize(message, principal, hb, res, signal);
      }
      if (clientId === undefined)
        throw causewayError('invalid_request', 'Mcp-Session-Id is required: send initialize first');
      const record = SESSION_ID.test(clientId) ? await this.opts.facts.get(clientId) : undefined;
      if (record === undefined || record.principal !== principal || record.upstream !== this.opts.upstream)
        return sessionGone(res, id);
      const session: Session = { id: clientId, record };
      if (method === 'GET') return await this.getStreams.serve(session, principal, hb, res, signal);
      if (method === 'DELETE') {
        await this.opts.facts.end(session.id);
        this.getStreams.end(session.id);
        // A GET stream held on another replica reads the session again, finds it gone, and ends.
        this.opts.rounds.changed(session.id);
        return sendStatus(res, 200);
      }
      if (message === undefined) throw causewayError('method_not_allowed');
      if (isResponse(message)) {
        const taken = await this.opts.rounds.answer(session.id, message);
        if (!taken) throw causewayError('invalid_request', 'No request of this session waits for this answer');
        return sendStatus(res, 202);
      }
      if (isNotification(message)) {
        if (message.method === 'notifications/cancelled' && isObject(message.params)) {
          this.calls
            .get(`${session.id} ${String(message.params.requestId)}`)
            ?.abort(new Error('cancelled by the client'));
        }
        return sendStatus(res, 202);
      }
      return await this.request(session, message as JsonRpcRequest, principal, headers, hb, res, signal, access);
    } catch (err) {
      if (!signal.aborted) refuse(res, err, id, this.log);
    }
  }

  endStreams(): void {
    this.getStreams.endAll();
  }

  async close(): Promise<void> {
    this.endStreams();
    this.opts.facts.close();
    await this.opts.rounds.close();
  }

  private nextId(): string {
    return `${this.idPrefix}-${(this.seq++).toString(36)}`;
  }

  private async initialize(
    msg: JsonRpcRequest,
    principal: string,
    headers: HeaderBag,
    res: HttpResponse,
    signal: AbortSignal,
  ): Promise<void> {
    const { protocolVersion, capabilities, clientInfo } = readInitializeParams(msg.params);
    const version = negotiate(protocolVersion);
    const facts = { clientInfo, capabilities: declared(capabilities) };
    const discover = modernRequest(
      { jsonrpc: '2.0', id: 0, method: 'server/discover' },
      this.nextId(),
      facts,
      undefined,
    );
    const { response } = await this.opts.client.request(discover, undefined, {
      headers: this.opts.forward.pick(headers),
      principal,
      signal,
    });
    if (!('result' in response) || !Array.isArray(response.result.supportedVersions)) {
      this.opts.onRefused?.();
      throw causewayError('upstream_bad_response', 'The upstream answered server/discover with no DiscoverResult');
    }
    const clientId = newSessionId();
    const runsTasks = isObject(response.result.capabilities) && declaresTasks(response.result.capabilities);
    const record = {
      upstream: this.opts.upstream,
      principal,
      version,
      clientInfo: clientInfoOf(clientInfo),
      capabilities: facts.capabilities,
      uris: [],
    };
    await this.opts.facts.put(clientId, { ...record, ...(runsTasks ? { runsTasks, tasks: [] } : {}) });
    const result = initializeResult(response.result, version, this.opts.upstream);
    const answer = legacyMessage({ jsonrpc: '2.0', id: msg.id, result });
    sendJson(res, 200, answer, { 'mcp-session-id': clientId });
  }

  /** A request the legacy era has and 2026 answers differently, or the call itself. */
  private async request(
    session: Session,
    msg: JsonRpcRequest,
    principal: string,
    headers: IncomingHttpHeaders,
    hb: HeaderBag,
    res: HttpResponse,
    signal: AbortSignal,
    access: ListLens | undefined,
  ): Promise<void> {
    const params = isObject(msg.params) ? msg.params : {};
    switch (msg.method) {
      case 'ping':
        return sendJson(res, 200, { jsonrpc: '2.0', id: msg.id, result: {} });
      case 'logging/setLevel': {
        if (typeof params.level !== 'string')
          throw causewayError('invalid_params', 'logging/setLevel needs params.level');
        const level = params.level;
        // Changed from the latest record: a task another request just added stays (sessions.ts).
        await this.opts.facts.update(session.id, (r) => ({ ...r, logLevel: level }));
        return sendJson(res, 200, { jsonrpc: '2.0', id: msg.id, result: {} });
      }
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        if (typeof params.uri !== 'string') throw causewayError('invalid_params', `${msg.method} needs params.uri`);
        const uri = params.uri;
        const subscribe = msg.method === 'resources/subscribe';
        const uris = (r: SessionRecord) => [...r.uris.filter((u) => u !== uri), ...(subscribe ? [uri] : [])];
        await this.opts.facts.update(session.id, (r) => ({ ...r, uris: uris(r) }));
        this.opts.rounds.changed(session.id);
        return sendJson(res, 200, { jsonrpc: '2.0', id: msg.id, result: {} });
      }
    }
    const tasks = msg.method.startsWith('tasks/');
    if ((tasks || isObject(params.task)) && session.record.runsTasks !== true) {
      throw causewayError(
        'method_not_found',
        'This upstream runs no tasks of the 2025-11-25 era: call the tool without params.task',
      );
    }
    const key = `${session.id} ${String(msg.id)}`;
    const call = new AbortController();
    this.calls.set(key, call);
    const relatedTask = msg.method === 'tasks/result' && typeof params.taskId === 'string' ? params.taskId : undefined;
    const out = new CallStream(res, this.opts.keepAliveMs, relatedTask);
    try {
      const callSignal = AbortSignal.any([signal, call.signal]);
      const sse = acceptsSse(headers);
      const run = (keep?: (result: JsonObject) => void) =>
        this.call(session, msg, principal, sse, hb, out, callSignal, access, keep);
      const cache = this.opts.cache;
      if (tasks) {
        const req = this.taskRequest(session, principal, sse, hb, out, callSignal);
        out.finish({ jsonrpc: '2.0', id: msg.id, ...(await this.tasks.answer(req, msg.method, params)) });
      } else if (cache === undefined || !isCacheable(msg.method, params)) await run();
      else {
        // Discover, lists and reads: from the gateway cache, shared with the upstream's modern clients.
        const q = cache.query(msg.method, params, principal, hb.authorization);
        await cache.through(
          q,
          undefined,
          (e) => out.finish(this.answerWith(msg, params, cache.result(e), access)),
          (fill) => run((result) => cache.keepModern(q, fill, result)),
        );
      }
    } finally {
      out.close();
      this.calls.delete(key);
    }
  }

  /**
   * A legacy client's answer from a 2026 result: the 2026-only fields gone, a tools/list learned, a list filtered for
   * the grant.
   */
  private answerWith(
    msg: JsonRpcRequest,
    params: JsonObject,
    result: JsonObject,
    access: ListLens | undefined,
  ): JsonRpcResponse {
    let answer = legacyResponse({ jsonrpc: '2.0', id: msg.id, result }, msg.id, msg.method, params);
    if (msg.method === 'tools/list' && 'result' in answer)
      answer = { ...answer, result: this.tools.learn(answer.result) };
    if ('result' in answer && access?.mayHide(msg.method))
      answer = { ...answer, result: access.filterList(msg.method, answer.result) };
    return answer;
  }

  /**
   * The call, round after round: the asks of each input_required put to the client, its answers
   * sent back. `keep`: told the first round's complete result, for the gateway cache.
   */
  private async call(
    session: Session,
    msg: JsonRpcRequest,
    principal: string,
    sse: boolean,
    headers: HeaderBag,
    out: CallStream,
    signal: AbortSignal,
    access: ListLens | undefined,
    keep?: (result: JsonObject) => void,
  ): Promise<void> {
    const params = isObject(msg.params) ? msg.params : {};
    const upstreamHeaders = this.opts.forward.pick(headers);
    // A task-augmented call [L-TASKS]: the extension declared instead, and no task param [SEP-2663].
    const asTask = msg.method === 'tools/call' && isObject(params.task);
    const sent = asTask ? { ...msg, params: copyObject(params, (k) => k === 'task') } : msg;
    const facts = asTask ? withTasks(session.record) : session.record;
    if (msg.method === 'tools/call' && typeof params.name === 'string') {
      const args = isObject(params.arguments) ? params.arguments : undefined;
      if (!this.tools.has(params.name) && args !== undefined && Object.keys(args).length > 0)
        await this.tools.read(this.opts.client, session.record, () => this.nextId(), {
          headers: upstreamHeaders,
          principal,
          signal,
        });
      if (this.tools.invalid(params.name))
        throw causewayError(
          'invalid_params',
          `Tool ${params.name} has invalid x-mcp-header annotations and is not served`,
        );
      Object.assign(upstreamHeaders, this.tools.headersFor(params.name, args));
    }
    let extra: JsonObject | undefined;
    for (let round = 0; ; round++) {
      if (round > this.opts.maxRounds)
        throw causewayError(
          'upstream_bad_response',
          `The upstream asked more than ${this.opts.maxRounds} rounds of questions`,
        );
      const request = modernRequest(sent, this.nextId(), facts, session.record.logLevel, extra);
      const { status, response } = await this.opts.client.request(request, callName(msg.method, msg.params), {
        headers: upstreamHeaders,
        principal,
        signal,
        onNotification: (n) => (sse ? out.send(n) : undefined),
      });
      if ('error' in response && status === 400 && response.error.code === -32000) {
        this.opts.onRefused?.();
        throw causewayError(
          'upstream_bad_response',
          `The upstream refused a 2026-07-28 request: ${response.error.message.slice(0, 200)}`,
        );
      }
      const result = 'result' in response ? response.result : undefined;
      if (result?.resultType === 'task') {
        if (!asTask) throw causewayError('upstream_bad_response', 'The upstream answered a task to an untasked call');
        out.finish({ jsonrpc: '2.0', id: msg.id, result: await this.tasks.created(session, result) });
        return;
      }
      if (result?.resultType !== 'input_required') {
        if (result !== undefined && round === 0) keep?.(result);
        out.finish(
          'error' in response
            ? legacyResponse(response, msg.id, msg.method, params)
            : this.answerWith(msg, params, response.result, access),
        );
        return;
      }
      const asks = isObject(result.inputRequests) ? result.inputRequests : {};
      const keys = Object.keys(asks);
      this.log.debug(
        { round, keys, answered: extra ? Object.keys(extra.inputResponses ?? {}) : [] },
        'input_required round',
      );
      const inputResponses = keys.length > 0 ? await this.ask(session, asks, sse, out, signal) : {};
      extra = {
        inputResponses,
        ...(typeof result.requestState === 'string' ? { requestState: result.requestState } : {}),
      };
      if (keys.length === 0) delete extra.inputResponses;
    }
  }

  /**
   * Puts the server's asks to the client as the legacy era's server->client requests on the
   * call's stream, each answer POSTed to any replica (rounds.ts): the answers, by key.
   */
  private async ask(
    session: Session,
    asks: JsonObject,
    sse: boolean,
    out: CallStream,
    signal: AbortSignal,
  ): Promise<JsonObject> {
    const keys = Object.keys(asks);
    if (!sse) {
      const words = 'The server needs to ask the client something: send Accept: text/event-stream';
      throw causewayError('not_acceptable', words);
    }
    for (const key of keys) {
      const ask = asks[key];
      const capability = isObject(ask) && typeof ask.method === 'string' ? ASK_CAPABILITY[ask.method] : undefined;
      if (capability === undefined) {
        const what = isObject(ask) ? String(ask.method) : 'something';
        throw causewayError('upstream_bad_response', `The server asked the client ${what}, which no client is asked`);
      }
      if (!isObject(session.record.capabilities[capability])) {
        throw causewayError('invalid_request', `The server asked for ${capability}, which this client did not declare`);
      }
    }
    const { ids, answered } = this.opts.rounds.open(session.id, keys, signal);
    for (const key of keys) {
      const ask = asks[key] as JsonObject;
      const params = isObject(ask.params) ? { params: ask.params } : {};
      out.send({ jsonrpc: '2.0', id: ids.get(key)!, method: ask.method as string, ...params });
    }
    const inputResponses: JsonObject = {};
    for (const [key, answer] of await answered) {
      if ('error' in answer) {
        const method = String((asks[key] as JsonObject).method);
        const words = `The client refused the server's ${method}: ${answer.error.message}`;
        throw new CausewayError('invalid_request', words);
      }
      inputResponses[key] = answer.result;
    }
    return inputResponses;
  }

  /** A legacy tasks request as tasks.ts sees it: the upstream with the extension declared, the client on `out`. */
  private taskRequest(
    session: Session,
    principal: string,
    sse: boolean,
    headers: HeaderBag,
    out: CallStream,
    signal: AbortSignal,
  ): TaskRequest {
    const upstreamHeaders = this.opts.forward.pick(headers);
    const facts = withTasks(session.record);
    return {
      session,
      signal,
      send: async (method, params, name) => {
        const request = modernRequest({ jsonrpc: '2.0', id: 0, method, params }, this.nextId(), facts, undefined);
        const options = { headers: upstreamHeaders, principal, signal };
        const { response } = await this.opts.client.request(request, name, options);
        return response;
      },
      ask: (asks) => this.ask(session, asks, sse, out, signal),
      waiting: () => (sse ? void out.open() : undefined),
    };
  }
}
