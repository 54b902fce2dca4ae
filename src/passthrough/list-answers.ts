// A legacy client's tools, prompts, resources and templates lists, as its token may see them: the
// upstream's answer (JSON, or an SSE stream carrying the response among notifications) is read,
// the response to the list request filtered by the request's lens (its token's grant, its
// mount's view), everything else passed on. Only answers that could lose an item are read: one
// JSON body, or one SSE event at a time, each held to the upstream's maxResponseBytes; past it
// the client gets upstream_bad_response, never the unfiltered list.

import type { ServerResponse } from 'node:http';
import type { ListLens } from '../view/index.js';
import { errorBody, sendCausewayError, sendJson, type HttpResponse } from '../egress/index.js';
import { causewayError, toCausewayError } from '../errors.js';
import { isObject, isRequest, type RequestId } from '../jsonrpc.js';
import { abandon, checkContentLength, mediaType, parseSse, readText } from '../upstream/index.js';
import type { ResponseBody, SseEvent } from '../upstream/index.js';

/** The list requests of a legacy POST whose answers lose items for this access: id -> method. */
export type ListRequests = ReadonlyMap<RequestId, string>;

/** The list requests of a body (one message, or a 2025-03-26 batch) to filter; undefined when none. */
export function listRequests(access: ListLens | undefined, body: unknown): ListRequests | undefined {
  if (access === undefined) return undefined;
  const out = new Map<RequestId, string>();
  for (const m of Array.isArray(body) ? body : [body])
    if (isRequest(m) && access.mayHide(m.method)) out.set(m.id, m.method);
  return out.size > 0 ? out : undefined;
}

/** A message or batch with the responses to `lists` filtered; `answered` learns their ids. */
function filtered(value: unknown, lists: ListRequests, access: ListLens, answered: Set<RequestId>): unknown {
  if (Array.isArray(value)) return value.map((m) => filtered(m, lists, access, answered));
  if (!isObject(value) || (typeof value.id !== 'string' && typeof value.id !== 'number')) return value;
  const method = lists.get(value.id);
  if (method === undefined || value.method !== undefined) return value;
  answered.add(value.id);
  return isObject(value.result) ? { ...value, result: access.filterList(method, value.result) } : value;
}

/** The id a refusal names: the one list request's, or null for a batch. */
function idOf(lists: ListRequests): RequestId | null {
  return lists.size === 1 ? lists.keys().next().value! : null;
}

function eventText(ev: SseEvent, data: string): string {
  let text = ev.event === undefined ? '' : `event: ${ev.event}\n`;
  if (data !== '')
    text += data
      .split('\n')
      .map((line) => `data: ${line}\n`)
      .join('');
  return text === '' ? '' : `${text}\n`;
}

/** The upstream's 200 answer to list requests, and what relaying it filtered takes. */
export interface ListAnswer {
  body: ResponseBody;
  /** Those the client gets (hop-by-hop ones already gone). */
  headers: Record<string, string>;
  res: HttpResponse;
  lists: ListRequests;
  access: ListLens;
  /** The most read of the JSON body, or of one SSE event. */
  maxBytes: number;
}

/** Relays the upstream's 200 answer to list requests, filtered. */
export async function relayFiltered(answer: ListAnswer): Promise<void> {
  const { body, headers, res, lists } = answer;
  const type = mediaType(headers['content-type']);
  if (type === 'application/json') return relayJson(answer);
  if (type === 'text/event-stream') return relaySse(answer);
  abandon(body);
  sendCausewayError(
    res,
    causewayError('upstream_bad_response', 'Upstream answered a list request with neither JSON nor SSE'),
    idOf(lists),
  );
}

async function relayJson({ body, headers, res, lists, access, maxBytes }: ListAnswer): Promise<void> {
  let value: unknown;
  try {
    checkContentLength(body, headers['content-length'], maxBytes);
    delete headers['content-length'];
    const text = await readText(body, maxBytes);
    try {
      value = JSON.parse(text);
    } catch {
      throw causewayError('upstream_bad_response', 'Upstream answered a list request with a body that is not JSON');
    }
  } catch (err) {
    return sendCausewayError(res, toCausewayError(err), idOf(lists));
  }
  sendJson(res, 200, filtered(value, lists, access, new Set()), headers);
}

/**
 * Event by event; event ids and retry hints are left out, so that a client cannot resume this
 * stream with a GET (Last-Event-ID) whose replay would carry the list unfiltered.
 */
async function relaySse({ body, headers, res, lists, access, maxBytes }: ListAnswer): Promise<void> {
  delete headers['content-length'];
  res.writeHead(200, headers);
  (res as { flushHeaders?: () => void }).flushHeaders?.();
  const answered = new Set<RequestId>();
  const write = (ev: SseEvent): void => {
    let data = ev.data;
    if (data !== '' && (ev.event === undefined || ev.event === 'message')) {
      try {
        data = JSON.stringify(filtered(JSON.parse(data), lists, access, answered));
      } catch {
        // Not JSON: no list in it, and the client's to make sense of.
      }
    }
    const text = eventText(ev, data);
    if (text !== '' && !res.destroyed) (res as ServerResponse).write(text);
  };
  try {
    for await (const ev of parseSse(body, { maxEventBytes: maxBytes })) write(ev);
  } catch (err) {
    abandon(body);
    if (res.destroyed) return;
    const e = toCausewayError(err);
    for (const id of lists.keys())
      if (!answered.has(id))
        (res as ServerResponse).write(
          eventText({ data: '' }, JSON.stringify(errorBody(id, { code: e.code, message: e.message }))),
        );
  }
  res.end();
}
