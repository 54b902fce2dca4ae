// handleModern(): a validated 2026-07-28 request, from principal to reply, readable top to
// bottom. Each stage either hands a value to the next or ends the request with a typed error.

import { discoverResult, toolFacts } from './dialect/index.js';
import { SseStream, sendJson, sendText } from './egress/index.js';
import { isCacheable } from './cache/index.js';
import {
  checkParamHeaders,
  levelAtLeast,
  mayNeedParamHeaders,
  type HeaderBag,
  type ModernRequest,
} from './envelope/index.js';
import { causewayError, CausewayError } from './errors.js';
import {
  isErrorResponse,
  isObject,
  type JsonObject,
  type JsonRpcNotification,
  type JsonRpcResponse,
} from './jsonrpc.js';
import type { Logger } from './log.js';
import { sessionRef, type PooledSession, type SessionKey } from './pool/index.js';
import {
  answerFailure,
  learnTools,
  modernAnswer,
  sessionKeyFor,
  type Answered,
  type Federation,
  type Keep,
  type ModernDeps,
  type ModernExchange,
  type ModernMount,
  type ModernSide,
  type Routed,
} from './routing/index.js';
import { callHeaders, enableLogging, refuseAsk, relayCall, isEraRefusal, type CallObserver } from './upstream/index.js';
import { runRound, signInRound, type HeldAsTask, type RoundResult } from './mrtr/index.js';
import { answerTask, holdsTasks, refuseRequiredTask, taskPlan, upstreamTaskCreated } from './tasks/index.js';
import { OTHER_NAME, type AnswerOutcome, type ResultType, type UpstreamMetrics } from './metrics/index.js';
import { inRequestSpan } from './tracing/index.js';
import { refusedAnswer, relayModern } from './passthrough/index.js';
import { viewedExchange } from './view/index.js';

/** A modern request on a mount, as the front door hands it over. */
export function serveModern(ex: ModernExchange, mount: ModernMount): Promise<void> {
  return inRequestSpan(ex.request, ex.headers, (span) => {
    if (span && ex.notes) ex.notes.traceId = span.spanContext().traceId;
    const traced = span ? { ...ex, span } : ex;
    const serve = (e: ModernExchange) =>
      mount.federation ? handleFederated(e, mount.federation) : handleModern(e, mount.upstream);
    if (mount.view === undefined) return mount.front ? mount.front.serve(traced, serve) : serve(traced);
    let seen: ModernExchange;
    try {
      seen = viewedExchange(traced, mount.view);
    } catch (err) {
      // A name the view hides: refused as an unknown one, nothing sent upstream, counted as one.
      const hidden = { ...traced, shownName: OTHER_NAME };
      return measured(hidden, (mount.federation ?? mount.upstream).metrics, () => Promise.reject(err));
    }
    return mount.front ? mount.front.serve(seen, serve) : serve(seen);
  });
}

export function handleModern(ex: ModernExchange, deps: ModernDeps): Promise<void> {
  if (ex.notes) ex.notes.upstream = deps.upstreamName;
  const modern = deps.modern;
  if (modern !== undefined && modern.era.current !== 'legacy')
    return measured(ex, deps.metrics, () => byEra(ex, deps, modern));
  // Legacy, as known or as the only era the upstream can have: the translated path, nothing in between.
  return measured(ex, deps.metrics, () => answer(ex, deps), modern && deps);
}

/**
 * A request to an upstream that may speak 2026-07-28: relayed as it is when it does, translated
 * for its legacy sessions when not. An upstream that refuses the era in use (upgraded or rolled
 * back in place) has its era found again, and the request is served once more in the new one.
 */
async function byEra(ex: ModernExchange, deps: ModernDeps, modern: ModernSide, again = true): Promise<Answered> {
  const era = modern.era.current ?? (await modern.era.era(ex.signal));
  if (era === 'legacy') {
    try {
      return await answer(ex, deps);
    } catch (err) {
      if (again && isEraRefusal(err) && modern.era.refused(err)) return byEra(ex, deps, modern, false);
      throw err;
    }
  }
  const { request } = ex;
  const relayed = await relayModern(
    {
      id: request.id,
      method: request.method,
      name: request.name,
      body:
        ex.body ??
        Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: request.id, method: request.method, params: request.params })),
      headers: ex.headers,
      res: ex.res,
      signal: ex.signal,
      access: ex.access,
      principal: ex.principal,
      params: request.params,
      notes: ex.notes,
    },
    {
      client: modern.client,
      forward: deps.forward,
      maxResponseBytes: modern.maxResponseBytes,
      listens: modern.listens,
      cache: modern.cache,
      learn: (method, result) => deps.metrics.learn(method, result),
    },
  );
  if (relayed !== 'refused') return relayed;
  if (again && modern.era.refused()) return byEra(ex, deps, modern, false);
  refusedAnswer(ex.res, request.id);
  return 'upstream_error';
}

/**
 * A request on a federated mount: the routing stage either answers it from every member (merged
 * discover and lists, one listen stream), or names the member that serves it, and the rest of
 * the pipeline runs on that member.
 */
export async function handleFederated(ex: ModernExchange, federation: Federation): Promise<void> {
  const plan = federation.plan(ex);
  if ('merged' in plan) return measured(ex, federation.metrics, plan.merged);
  let routed: Routed;
  try {
    routed = await plan.route();
  } catch (err) {
    return measured(ex, federation.metrics, () => Promise.reject(err));
  }
  // The member gets the request as routed (its own names): the client's bytes no longer say it.
  return handleModern({ ...ex, request: routed.request, body: undefined }, routed.member.deps);
}

/** Runs an answering stage: a typed error it throws becomes the reply; either way the answer is counted once. */
async function measured(
  ex: ModernExchange,
  metrics: UpstreamMetrics,
  answer: () => Promise<Answered>,
  eraOf?: ModernDeps,
): Promise<void> {
  const started = performance.now();
  let resultType: ResultType;
  let outcome: AnswerOutcome;
  try {
    let answered: Answered;
    try {
      answered = await answer();
    } catch (err) {
      // An upstream known as legacy refused the era (upgraded in place): found again, and served once more.
      const modern = eraOf?.modern;
      if (modern === undefined || !isEraRefusal(err) || !modern.era.refused(err)) throw err;
      answered = await byEra(ex, eraOf!, modern, false);
    }
    resultType = answered === 'upstream_error' ? 'error' : answered;
    outcome = answered === 'upstream_error' ? 'upstream_error' : 'ok';
  } catch (err) {
    resultType = 'error';
    outcome = fail(ex, err);
  }
  if (ex.notes) ex.notes.resultType = resultType;
  const seconds = (performance.now() - started) / 1000;
  metrics.answered(ex.request.method, ex.request.name, resultType, outcome, seconds, ex.shownName);
}

async function answer(ex: ModernExchange, deps: ModernDeps): Promise<Answered> {
  const { request, principal } = ex;
  const key = sessionKeyFor(deps.upstreamName, principal, request.meta.clientCapabilities);
  const cache = deps.cache;
  if (cache === undefined || !request.spec.cacheable || !isCacheable(request.method, request.params))
    return answerOn(ex, deps, key, undefined);
  // The policy says who may share the answer: a private one is keyed by the session's key (the
  // principal and the capabilities it was opened with) and the request's token.
  const hint = deps.cacheHint(request.method);
  // A private discover is made here from the session's own record: an entry per session would
  // hold a copy of it to save a lookup of that session, which a pooled one answers from memory.
  if (hint.cacheScope === 'private' && request.method === 'server/discover') return answerOn(ex, deps, key, undefined);
  const q = cache.query(
    request.method,
    request.params,
    hint.cacheScope === 'public' ? '' : key.id,
    ex.headers.authorization,
  );
  return cache.through(
    q,
    hint.cacheScope,
    (e) => {
      if (ex.notes) ex.notes.cache = 'hit';
      const see = ex.access?.mayHide(request.method)
        ? (r: JsonObject) => ex.access!.filterList(request.method, r)
        : undefined;
      sendText(ex.res, 200, 'application/json', cache.answer(request.id, e, see));
      return 'complete';
    },
    (fill) => {
      if (ex.notes) ex.notes.cache = 'miss';
      return answerOn(ex, deps, key, (session, result) =>
        cache.keepLegacy(q, fill, result, hint, {
          capabilities: session.record.initializeResult.capabilities,
          streamHeld: deps.subscriptions.holdsStream(session, hint.cacheScope),
          id: session.key.id,
        }),
      );
    },
  );
}

async function answerOn(
  ex: ModernExchange,
  deps: ModernDeps,
  key: SessionKey,
  keep: Keep | undefined,
): Promise<Answered> {
  const { request, principal } = ex;
  if (request.method === 'server/discover') {
    const session = await deps.pool.acquire(key);
    const result = discoverResult(
      session.record.initializeResult,
      deps.cacheHint(request.method),
      await holdsTasks(ex, deps, session, learnTools),
    );
    keep?.(session, result);
    sendJson(ex.res, 200, { jsonrpc: '2.0', id: request.id, result });
    return 'complete';
  }
  if (request.method === 'subscriptions/listen') {
    // Counted when the stream ends, however it ends (drain, client gone, upstream lost).
    await deps.subscriptions.listen({ ...ex, parts: [{ key }] });
    return 'complete';
  }
  if (request.spec.task) {
    sendJson(ex.res, 200, { jsonrpc: '2.0', id: request.id, result: await answerTask(request, deps, principal) });
    return 'complete';
  }
  const stream = wantsStream(request) && acceptsStream(ex.headers) ? new SseStream(ex.res) : undefined;
  let outcome: Forwarded;
  const since = Date.now();
  try {
    outcome = await deps.pool.withSession(key, (session) => {
      if (ex.notes) ex.notes.session = session.record.createdAt >= since ? 'opened' : 'reused';
      return forward(ex, deps, session, stream, principal);
    });
  } catch (err) {
    // The upstream wants the user's own token: a call asks the user to sign in, in a URL-mode round.
    if (!(request.spec.multiRound && err instanceof CausewayError && err.reason === 'upstream_authorization_required'))
      throw err;
    const { url } = err.data as { url: string };
    const round = signInRound({ request, principal }, deps.bridge, url, err.message);
    replyBody(ex, 200, { jsonrpc: '2.0', id: request.id, result: round.result }, stream);
    return 'input_required';
  }
  if (outcome.result.kind === 'input') {
    replyBody(ex, 200, { jsonrpc: '2.0', id: request.id, result: outcome.result.result }, stream);
    return 'input_required';
  }
  if (outcome.result.kind === 'task') {
    replyBody(ex, 200, { jsonrpc: '2.0', id: request.id, result: outcome.result.created }, stream);
    return 'task';
  }
  const { response } = outcome.result;
  if (request.method === 'tools/call' && !outcome.asTask)
    await refuseRequiredTask(ex, deps, outcome.session, response, learnTools);
  const created = outcome.asTask ? upstreamTaskCreated(deps, key, principal, outcome.session, response) : undefined;
  if (created) {
    replyBody(ex, 200, { jsonrpc: '2.0', id: request.id, result: await created }, stream);
    return 'task';
  }
  return reply(ex, deps, outcome.session, response, stream, keep);
}

interface Forwarded {
  session: PooledSession;
  /** The round's outcome, or the CreateTaskResult of a call Causeway holds as a task. */
  result: RoundResult;
  /** The call was sent as a legacy task-augmented tools/call. */
  asTask: boolean;
}

function wantsStream(request: ModernRequest): boolean {
  return request.meta.progressToken !== undefined || request.meta.logLevel !== undefined;
}

/** An Accept listing only application/json gets JSON even when the request wanted progress or logs [SHTTP]. */
function acceptsStream(headers: HeaderBag): boolean {
  const accept = headers.accept;
  return accept === undefined || /text\/event-stream|\*\/\*/i.test(accept);
}

/** Where this request's progress and log notifications go: its stream, or counted as dropped. */
function notificationSink(deps: ModernDeps, stream: SseStream | undefined): (n: JsonRpcNotification) => void {
  if (stream) return (n) => stream.send(n);
  return (n) => deps.metrics.notificationDropped(n.method === 'notifications/progress' ? 'progress' : 'log');
}

async function forward(
  ex: ModernExchange,
  deps: ModernDeps,
  session: PooledSession,
  stream: SseStream | undefined,
  principal: string,
): Promise<Forwarded> {
  let { request } = ex;
  const ref = sessionRef(session);
  const capability = request.spec.capability;
  const advertised = session.record.initializeResult.capabilities;
  if (capability && !(isObject(advertised) && isObject(advertised[capability]))) {
    throw causewayError('method_not_found', `Method not found: ${request.method}`);
  }
  let asTask = false;
  let heldAsTask: HeldAsTask | undefined;
  if (request.method === 'tools/call') {
    await checkToolHeaders(ex, deps, session);
    let runHere: false | 'now' | 'after-asks';
    let asksInTask: boolean;
    ({ request, asTask, runHere, asksInTask } = await taskPlan(ex, deps, session, principal, learnTools));
    const origin = { upstream: deps.upstreamName, key: session.key, principal, session };
    if (runHere === 'now') {
      const call = {
        params: request.params,
        headers: callHeaders(request.method, request.name, deps.forward.pick(ex.headers)),
      };
      return { session, result: { kind: 'task', created: await deps.tasks.runHere(origin, call, ex.log) }, asTask };
    }
    // Its first questions come as rounds (an optional tool's first one makes the task); once it
    // works, the tasks bridge holds it.
    if (runHere === 'after-asks') {
      const { tasks } = deps;
      const handover = (call: Parameters<typeof tasks.adopt>[1]) => tasks.adopt(origin, call, ex.log);
      heldAsTask = { firstAskMs: tasks.firstAskMs, asksInTask, ttlMs: tasks.ttlMs, handover };
    }
  }
  if (request.meta.logLevel !== undefined) await enableUpstreamLogging(deps, session, ex.log);
  const deliver = notificationSink(deps, stream);
  if (request.spec.multiRound) {
    const result = await runRound(
      {
        request,
        principal,
        signal: ex.signal,
        log: ex.log,
        send: deliver,
        onChange: (n) => deps.subscriptions.publishChange(session, n),
        onRetry: (round) => {
          if (ex.notes) ex.notes.round = round;
        },
        upstreamHeaders: callHeaders(request.method, request.name, deps.forward.pick(ex.headers)),
        ...(heldAsTask ? { asTask: heldAsTask } : {}),
      },
      ref,
      deps.bridge,
    );
    return { session, result, asTask };
  }

  const level = request.meta.logLevel;
  const observer: CallObserver = {
    onProgress: deliver,
    onOtherNotification: (n) => deps.subscriptions.publishChange(session, n),
    onLog: (n) => {
      const l = isObject(n.params) ? n.params.level : undefined;
      if (level !== undefined && typeof l === 'string' && levelAtLeast(l, level)) deliver(n);
    },
    // Only tools/call, prompts/get and resources/read may ask the client [MRTR]; other asks are refused.
    onServerRequest: (r) => {
      refuseAsk(deps.client, ref, r, `${r.method} is not available during ${request.method}`).catch((err: unknown) =>
        ex.log.debug({ err }, 'answering an upstream request failed'),
      );
    },
  };
  const upstream = await relayCall(
    deps.client,
    ref,
    deps.ids,
    {
      method: request.method,
      params: request.params,
      progressToken: request.meta.progressToken,
      headers: callHeaders(request.method, request.name, deps.forward.pick(ex.headers)),
    },
    observer,
    ex.log,
    ex.signal,
  );
  if (!isErrorResponse(upstream)) {
    if (request.method === 'tools/list') session.facts.learnTools(toolFacts(upstream.result));
    deps.metrics.learn(request.method, upstream.result);
  }
  return { session, result: { kind: 'upstream', response: upstream }, asTask };
}

/**
 * Mcp-Param-* checks need the tool's schema: learned from tools/list, fetched once per session
 * when unknown and the call could be refused by it [SHTTP §1.4]; a call with no header and no
 * argument value cannot be, so a cold one of those makes no tools/list.
 */
async function checkToolHeaders(ex: ModernExchange, deps: ModernDeps, session: PooledSession): Promise<void> {
  const name = ex.request.name!;
  const { facts } = session;
  const args = isObject(ex.request.params.arguments) ? ex.request.params.arguments : undefined;
  if (facts.toolHeaders(name) === undefined && !facts.knows(name) && mayNeedParamHeaders(ex.headers, args))
    await learnTools(ex, deps, session);
  const params = facts.toolHeaders(name);
  if (!params) return;
  const check = checkParamHeaders(ex.headers, params, args);
  if (!check.ok) throw causewayError('header_mismatch', check.message);
}

/** Legacy logging is per session; ask for everything once and filter per request. */
async function enableUpstreamLogging(deps: ModernDeps, session: PooledSession, log: Logger): Promise<void> {
  if (session.facts.loggingEnabled) return;
  const caps = session.record.initializeResult.capabilities;
  if (!(isObject(caps) && isObject(caps.logging))) return;
  const refused = await enableLogging(deps, sessionRef(session));
  if (refused) log.warn({ code: refused.code }, 'upstream refused logging/setLevel');
  session.facts.loggingEnabled = true;
}

function reply(
  ex: ModernExchange,
  deps: ModernDeps,
  session: PooledSession,
  upstream: JsonRpcResponse,
  stream: SseStream | undefined,
  keep: Keep | undefined,
): Answered {
  const { status, body } = modernAnswer(ex, deps, session, upstream, keep);
  replyBody(ex, status, body, stream);
  return isErrorResponse(upstream) ? 'upstream_error' : 'complete';
}

function replyBody(ex: ModernExchange, status: number, body: JsonObject, stream: SseStream | undefined): void {
  if (stream && ex.res.headersSent) stream.end(body);
  else sendJson(ex.res, status, body);
}

/** Answers with the error and returns its reason, or 'cancelled' when the client is gone. */
function fail(ex: ModernExchange, err: unknown): AnswerOutcome {
  return answerFailure(ex, ex.signal.aborted, err);
}
