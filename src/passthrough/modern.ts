// A modern client's request to a modern upstream: passed on as the client sent it, with what
// Causeway adds on the way (the upstream's credential, the client headers this upstream may
// get, Mcp-Method / Mcp-Name, the trace context). The answer comes back as the upstream gave it:
// `_meta`, `resultType`, `input_required` with its `requestState`, `ttlMs` / `cacheScope` and
// errors are the server's, relayed untouched; an SSE answer is relayed event by event (a
// subscriptions/listen for as long as both sides keep it). Only a list the token's scopes may
// hide part of is rewritten, filtered as on every other path. An answer that is neither JSON nor
// SSE, or a refusal with no JSON-RPC body, is 502 with the reason; nothing of it is relayed.

import { errorBody, sendCausewayError, sendJson, SseStream, type HttpResponse } from '../egress/index.js';
import { causewayError, toCausewayError } from '../errors.js';
import { isObject, type JsonObject, type JsonRpcResponse, type RequestId } from '../jsonrpc.js';
import type { ListLens } from '../view/index.js';
import { isCacheable, type UpstreamCache } from '../cache/index.js';
import {
  abandon,
  checkContentLength,
  decodeMessages,
  discard,
  mediaType,
  readText,
  sseMessages,
  type ForwardPolicy,
  type ModernClient,
  type RelayedListens,
  type ResponseBody,
} from '../upstream/index.js';

export interface ModernRelayRequest {
  id: RequestId;
  method: string;
  /** The tool, prompt or resource it names (Mcp-Name). */
  name: string | undefined;
  /** The body as the client sent it. */
  body: Uint8Array;
  headers: Readonly<Record<string, string | undefined>>;
  res: HttpResponse;
  signal: AbortSignal;
  access: ListLens | undefined;
  /** Whose upstream credential the request carries. */
  principal: string;
  /** The request's params, as the front door read them: what the gateway cache keys on. */
  params: JsonObject;
  /** The access log's notes: whether the cache answered. */
  notes?: { cache?: 'hit' | 'miss' };
}

export interface ModernRelayDeps {
  client: ModernClient;
  forward: ForwardPolicy;
  maxResponseBytes: number;
  listens: RelayedListens;
  /** The gateway cache, for discover, lists and reads: kept as the upstream's ttlMs and cacheScope say. */
  cache?: UpstreamCache;
  /** Learns the names a list page gives (metrics). */
  learn?(method: string, result: JsonObject): void;
}

/** Told the request's complete result, for the gateway cache. */
type Keep = (result: JsonObject) => void;

/** How the request was answered, for its metric; 'refused' when the upstream answered with no 2026 answer. */
export type Relayed = 'complete' | 'input_required' | 'task' | 'upstream_error' | 'refused';

const PARAM_HEADER = 'mcp-param-';

/** The client's headers this upstream gets: those the forward policy allows, and the mirrored parameters. */
function upstreamHeaders(
  deps: ModernRelayDeps,
  headers: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const out = deps.forward.pick(headers as Record<string, string>);
  for (const name in headers)
    if (name.startsWith(PARAM_HEADER) && headers[name] !== undefined) out[name] = headers[name];
  return out;
}

function outcomeOf(response: JsonRpcResponse): Relayed {
  if ('error' in response) return 'upstream_error';
  const type = isObject(response.result) ? response.result.resultType : undefined;
  return type === 'input_required' ? 'input_required' : type === 'task' ? 'task' : 'complete';
}

export async function relayModern(req: ModernRelayRequest, deps: ModernRelayDeps): Promise<Relayed> {
  const cache = deps.cache;
  if (cache !== undefined && isCacheable(req.method, req.params)) {
    const q = cache.query(req.method, req.params, req.principal, req.headers.authorization);
    return cache.through(
      q,
      undefined,
      (e): Relayed => {
        if (req.notes) req.notes.cache = 'hit';
        const see = req.access?.mayHide(req.method)
          ? (r: JsonObject) => req.access!.filterList(req.method, r)
          : undefined;
        sendText(req.res, 200, cache.answer(req.id, e, see));
        return 'complete';
      },
      (fill) => {
        if (req.notes) req.notes.cache = 'miss';
        return relay(req, deps, req.signal, undefined, (result) => cache.keepModern(q, fill, result));
      },
    );
  }
  if (req.method !== 'subscriptions/listen') return relay(req, deps, req.signal, undefined);
  const ending = deps.listens.add();
  try {
    return await relay(req, deps, AbortSignal.any([req.signal, ending.signal]), ending.signal);
  } finally {
    deps.listens.forget(ending);
  }
}

/** `ending`: a listen's, aborted by a drain. */
async function relay(
  req: ModernRelayRequest,
  deps: ModernRelayDeps,
  signal: AbortSignal,
  ending: AbortSignal | undefined,
  keep?: Keep,
): Promise<Relayed> {
  const res = await deps.client.post(req.body, req.method, req.name, {
    headers: upstreamHeaders(deps, req.headers),
    principal: req.principal,
    signal,
    longLived: ending !== undefined,
  });
  const type = mediaType(res.headers['content-type']);
  if (type === 'text/event-stream' && res.statusCode < 300) return relayStream(req, res.body, deps, ending, keep);
  if (type !== 'application/json') {
    void discard(res.body);
    if (res.statusCode >= 300) return 'refused';
    throw causewayError('upstream_bad_response', `Upstream answered ${req.method} with ${type || 'no content type'}`);
  }
  checkContentLength(res.body, res.headers['content-length'], deps.maxResponseBytes);
  const text = await readText(res.body, deps.maxResponseBytes);
  const [m] = parsed(text);
  if (m?.kind !== 'response') {
    if (res.statusCode >= 300) return 'refused';
    throw causewayError('upstream_bad_response', `Upstream answered ${req.method} with no response`);
  }
  const response = m.message;
  // -32000 is the legacy era's (2026 never answers with it): a legacy server refusing a session-less request.
  if (res.statusCode === 400 && 'error' in response && response.error.code === -32000) return 'refused';
  if (res.statusCode === 200) answered(req, deps, response, keep);
  const seen = filtered(req, response);
  if (seen === response) sendText(req.res, res.statusCode, text);
  else sendJson(req.res, res.statusCode, seen);
  return outcomeOf(response);
}

/** A response the upstream gave: a list's names learned, a complete result offered to the cache. */
function answered(
  req: ModernRelayRequest,
  deps: ModernRelayDeps,
  response: JsonRpcResponse,
  keep: Keep | undefined,
): void {
  if (!('result' in response) || !isObject(response.result)) return;
  deps.learn?.(req.method, response.result as JsonObject);
  keep?.(response.result as JsonObject);
}

/** The messages of a body, or none when it is not JSON-RPC (a refusal that is no 2026 answer). */
function parsed(text: string): ReturnType<typeof decodeMessages> {
  try {
    return decodeMessages(text);
  } catch {
    return [];
  }
}

function sendText(res: HttpResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A list response with what the token may not see left out; the response itself when nothing can be. */
function filtered(req: ModernRelayRequest, response: JsonRpcResponse): JsonRpcResponse {
  if (!req.access?.mayHide(req.method) || !('result' in response) || !isObject(response.result)) return response;
  return { ...response, result: req.access.filterList(req.method, response.result as JsonObject) };
}

/** An SSE answer, event by event: the request's notifications, then its response. */
async function relayStream(
  req: ModernRelayRequest,
  body: ResponseBody,
  deps: ModernRelayDeps,
  ending: AbortSignal | undefined,
  keep: Keep | undefined,
): Promise<Relayed> {
  const stream = new SseStream(req.res);
  stream.start();
  let outcome: Relayed | undefined;
  try {
    for await (const messages of sseMessages(body, deps.maxResponseBytes)) {
      for (const m of messages) {
        if (m.kind === 'response') {
          outcome = outcomeOf(m.message);
          answered(req, deps, m.message, keep);
          stream.send(filtered(req, m.message));
        } else if (m.kind === 'notification') {
          deps.cache?.changed(m.message);
          stream.send(m.message);
        }
        // A 2026 stream carries no requests [SHTTP]: one is left out.
      }
      if (outcome !== undefined && req.method !== 'subscriptions/listen') break;
    }
    if (outcome === undefined && req.method !== 'subscriptions/listen') {
      const e = causewayError('upstream_bad_response', 'The upstream ended the stream before its response');
      stream.send(errorBody(req.id, { code: e.code, message: e.message }));
    }
  } catch (err) {
    if (req.signal.aborted) return outcome ?? 'complete';
    if (ending?.aborted) {
      // The drain: the listen ends as a server ends one, with its result [SUBS].
      stream.send({
        jsonrpc: '2.0',
        id: req.id,
        result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': req.id } },
      });
      return 'complete';
    }
    const e = toCausewayError(err);
    if (outcome === undefined) stream.send(errorBody(req.id, { code: e.code, message: e.message }));
    outcome ??= 'upstream_error';
  } finally {
    abandon(body);
    stream.end();
  }
  // No response: the upstream ended the stream first (the request is lost, and the client was told so).
  if (outcome === undefined && req.method !== 'subscriptions/listen') return 'upstream_error';
  return outcome ?? 'complete';
}

/** The answer to a refused request once the era is found again and still modern: 502. */
export function refusedAnswer(res: HttpResponse, id: RequestId): void {
  sendCausewayError(
    res,
    causewayError(
      'upstream_bad_response',
      'The upstream answered with neither a 2026-07-28 answer nor a JSON-RPC error',
    ),
    id,
  );
}
