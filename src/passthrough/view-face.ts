// A filtered mount's legacy face (mounts.<path>.tools, .prompts, .resources): legacy clients see
// the view modern clients see. Wrapped around the mount's face only when the mount has a view, so
// an unfiltered mount's passthrough stays byte for byte as it is. A call naming what the view
// hides is answered -32602 (as the upstream answers an unknown name) and never sent; a renamed
// one is sent under the name the mount serves (body, Mcp-Name); lists are read through the view
// and then the token's grant, as list-answers.ts reads them for a grant alone.

import type { IncomingHttpHeaders } from 'node:http';
import { errorBody, sendJson } from '../egress/index.js';
import { causewayError, CausewayError } from '../errors.js';
import { isObject, isRequest, type JsonObject, type RequestId } from '../jsonrpc.js';
import { throughView, type ViewFilter } from '../view/index.js';
import type { LegacyFace, LegacyRequest } from './legacy-face.js';
import { routingHeaders } from './legacy.js';

/** A message as the mount serves it, or the error its request gets. */
type Seen = { message: unknown } | { refused: JsonObject };

export class ViewLegacyFace implements LegacyFace {
  constructor(
    private readonly face: LegacyFace,
    private readonly view: ViewFilter,
  ) {}

  forward(req: LegacyRequest): Promise<void> {
    const seen = { ...req, access: throughView(this.view, req.access) };
    const json = req.body?.json;
    if (req.method !== 'POST' || json === undefined) return this.face.forward(seen);
    const batch = Array.isArray(json);
    const messages = (batch ? json : [json]).map((m) => this.inbound(m));
    const refused = messages.flatMap((m) => ('refused' in m ? [m.refused] : []));
    if (refused.length > 0) {
      // Legacy clients get errors in-band, on 200; a batch naming a hidden name is sent nowhere.
      sendJson(req.res, 200, batch ? batchRefusal(json, refused) : refused[0]);
      return Promise.resolve();
    }
    const rewritten = messages.map((m) => (m as { message: unknown }).message);
    if (rewritten.every((m, i) => m === (batch ? json[i] : json))) return this.face.forward(seen);
    const value = batch ? rewritten : rewritten[0];
    // The client's own Mcp-Name named what the view showed it: the one sent names what the mount serves.
    const { 'mcp-name': _, ...headers } = req.headers;
    return this.face.forward({
      ...seen,
      headers: headers as IncomingHttpHeaders,
      body: { bytes: Buffer.from(JSON.stringify(value)), json: value },
      extraHeaders: routingHeaders(headers, value),
    });
  }

  private inbound(m: unknown): Seen {
    if (!isRequest(m) || !isObject(m.params)) return { message: m };
    try {
      const params = this.view.inbound(m.method, m.params);
      return { message: params === m.params ? m : { ...m, params } };
    } catch (err) {
      if (!(err instanceof CausewayError)) throw err;
      return { refused: inBand(m.id, err) };
    }
  }

  endStreams(): void {
    this.face.endStreams?.();
  }

  close(): Promise<void> {
    return this.face.close();
  }
}

/** Each request of a batch that named a hidden name: its own refusal, or -32602 for being in that batch. */
function batchRefusal(batch: unknown[], refused: JsonObject[]): JsonObject[] {
  const byId = new Map<RequestId, JsonObject>(refused.map((r) => [r.id as RequestId, r]));
  return batch.flatMap((m) => {
    if (!isRequest(m)) return [];
    const own = byId.get(m.id);
    return [own ?? inBand(m.id, causewayError('invalid_params', 'Not sent: its batch names what this server hides'))];
  });
}

function inBand(id: RequestId, err: CausewayError): JsonObject {
  return errorBody(id, { code: err.code, message: err.message, ...(err.data === undefined ? {} : { data: err.data }) });
}
