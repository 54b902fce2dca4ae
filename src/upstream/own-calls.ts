// The upstream requests Causeway makes on its own account rather than a client's: walking every
// page of a list (tool annotations for Mcp-Param-* checks, a federated mount's merged lists),
// turning on upstream logging, and refusing a server->client request nobody can answer. One
// place, so each is made the same way wherever it is needed.

import { isErrorResponse, type JsonObject, type JsonRpcErrorObject, type JsonRpcRequest } from '../jsonrpc.js';
import { type IdMinter, type SessionRef, type UpstreamSessionClient, tracedRequest } from './core/index.js';
import { refusal } from './http/index.js';

export interface OwnCallDeps {
  client: UpstreamSessionClient;
  ids: IdMinter;
  /** Sees every list page Causeway reads on its own account (the metrics learn names from it). */
  metrics: { learn(method: string, result: JsonObject): void };
}

export interface ListWalk {
  /** Every page was read (the last one had no nextCursor). */
  complete: boolean;
  /** The upstream's error, when it refused a page. */
  error?: JsonRpcErrorObject;
}

/**
 * Reads a list method page by page, handing each result to `onPage`, up to `maxPages`.
 * Stops at the upstream's first error, which it returns.
 */
export async function walkList(
  deps: OwnCallDeps,
  session: SessionRef,
  method: string,
  onPage: (result: JsonObject) => void,
  opts: { maxPages: number; signal?: AbortSignal; headers?: Record<string, string> },
): Promise<ListWalk> {
  let cursor: string | undefined;
  for (let page = 0; page < opts.maxPages; page++) {
    const request: JsonRpcRequest = {
      jsonrpc: '2.0',
      id: deps.ids.requestId(),
      method,
      params: cursor === undefined ? {} : { cursor },
    };
    const r = await tracedRequest(deps.client, session, request, {}, opts.signal, opts.headers);
    if (isErrorResponse(r)) return { complete: false, error: r.error };
    deps.metrics.learn(method, r.result);
    onPage(r.result);
    cursor = typeof r.result.nextCursor === 'string' ? r.result.nextCursor : undefined;
    if (cursor === undefined) return { complete: true };
  }
  return { complete: false };
}

/** logging/setLevel debug: legacy logging is per session, so Causeway asks for all and filters per request. */
export async function enableLogging(deps: OwnCallDeps, session: SessionRef): Promise<JsonRpcErrorObject | undefined> {
  const r = await tracedRequest(
    deps.client,
    session,
    { jsonrpc: '2.0', id: deps.ids.requestId(), method: 'logging/setLevel', params: { level: 'debug' } },
    {},
  );
  return isErrorResponse(r) ? r.error : undefined;
}

/** Refuses an upstream's server->client request; a failure to say so is only logged by the caller. */
export function refuseAsk(
  client: UpstreamSessionClient,
  session: SessionRef,
  r: JsonRpcRequest,
  message: string,
): Promise<void> {
  return client.respond(session, refusal(r.id, message));
}
