// A mount's skills for legacy clients, which know no skills extension: the skill files are
// plain resources [SKILLS "To a client that does not implement this extension, skill://
// resources are ordinary resources"]. Wrapped around the mount's legacy face: initialize gains
// the `resources` capability when the upstream has none, resources/list gets the skill files
// after the upstream's own, and resources/read of a skill file is answered from the folder.
// Everything else, batches included, goes to the face as it is.

import { errorBody, sendJson } from '../egress/index.js';
import { CausewayError } from '../errors.js';
import { isObject, isRequest, type JsonObject, type JsonRpcRequest } from '../jsonrpc.js';
import type { LegacyFace, LegacyRequest } from '../passthrough/index.js';
import { CapturedResponse, resultOf } from './capture.js';
import { contentsOf, resourceOf } from './content.js';
import { pageOf, readCursor, writeCursor } from './cursor.js';
import type { SkillFolder } from './folder.js';
import { lookupKey, SKILL_SCHEME } from './uri.js';

export interface SkillsLegacyOptions {
  folder: SkillFolder;
  prefixes: readonly string[];
  pageSize: number;
}

export class SkillsLegacyFace implements LegacyFace {
  constructor(
    private readonly face: LegacyFace,
    private readonly opts: SkillsLegacyOptions,
  ) {}

  async forward(req: LegacyRequest): Promise<void> {
    const { method, body, res } = req;
    const message = body?.json;
    if (method !== 'POST' || !isRequest(message)) return this.face.forward(req);
    try {
      if (message.method === 'initialize') return await this.initialize(message, req);
      if (message.method === 'resources/list') return await this.resources(message, req);
      if (message.method === 'resources/read') return await this.read(message, req);
    } catch (err) {
      if (!(err instanceof CausewayError)) throw err;
      // Legacy clients get errors in-band, on 200.
      return sendJson(
        res,
        200,
        errorBody(message.id, {
          code: err.code,
          message: err.message,
          ...(err.data === undefined ? {} : { data: err.data }),
        }),
      );
    }
    return this.face.forward(req);
  }

  endStreams(): void {
    this.face.endStreams?.();
  }

  close(): Promise<void> {
    return this.face.close();
  }

  private async initialize(message: JsonRpcRequest, req: LegacyRequest): Promise<void> {
    const caught = await this.caught(req);
    const response = caught.response(message.id);
    const result = resultOf(response);
    if (!result || (isObject(result.capabilities) && isObject(result.capabilities.resources)))
      return caught.replay(req.res);
    const capabilities = { ...(isObject(result.capabilities) ? result.capabilities : {}), resources: {} };
    sendJson(req.res, caught.statusCode, { ...response, result: { ...result, capabilities } }, caught.jsonHeaders());
  }

  private async read(message: JsonRpcRequest, req: LegacyRequest): Promise<void> {
    const uri = isObject(message.params) ? message.params.uri : undefined;
    if (typeof uri !== 'string') return this.face.forward(req);
    const look = lookupKey(uri);
    if (!look.ok && look.foreign) return this.face.forward(req);
    if (!look.ok)
      return sendJson(
        req.res,
        200,
        errorBody(message.id, { code: -32602, message: `${uri} is refused: ${look.reason}`, data: { uri } }),
      );
    const hit = this.opts.folder.current.files.get(look.key);
    if (hit)
      return sendJson(req.res, 200, { jsonrpc: '2.0', id: message.id, result: { contents: [contentsOf(hit.file)] } });
    if (!this.opts.prefixes.some((p) => p === '' || look.key.startsWith(`${SKILL_SCHEME}${p}/`)))
      return this.face.forward(req);
    // The legacy era's own code for a missing resource [L-RES].
    return sendJson(
      req.res,
      200,
      errorBody(message.id, { code: -32002, message: `Resource not found: ${uri}`, data: { uri } }),
    );
  }

  private async resources(message: JsonRpcRequest, req: LegacyRequest): Promise<void> {
    const params: JsonObject = isObject(message.params) ? message.params : {};
    const cursor = readCursor(params.cursor, 'resources/list');
    const files = this.opts.folder.current.fileList;
    const { access } = req;
    const folderPage = (offset: number): { items: JsonObject[]; next: string | undefined } => {
      const { page, next } = pageOf(files, offset, this.opts.pageSize, 'resources/list');
      const items = page.map(({ file, skill }) => resourceOf(file, skill));
      // As the token may see them [auth.rules]: the upstream's own part is filtered by the face.
      return {
        items: access
          ? ((access.filterList('resources/list', { resources: items }).resources as JsonObject[] | undefined) ?? [])
          : items,
        next,
      };
    };
    const { res } = req;
    const reply = (result: JsonObject, headers: Record<string, string> = {}, status = 200) =>
      sendJson(res, status, { jsonrpc: '2.0', id: message.id, result }, headers);
    if (cursor?.at === 'folder') {
      const { items, next } = folderPage(cursor.offset);
      return reply(next === undefined ? { resources: items } : { resources: items, nextCursor: next });
    }
    const own = { ...params };
    delete own.cursor;
    if (cursor?.cursor !== undefined) own.cursor = cursor.cursor;
    const bytes = Buffer.from(JSON.stringify({ ...message, params: own }));
    const caught = await this.caught({ ...req, body: { bytes, json: { ...message, params: own } } });
    const response = caught.response(message.id);
    const result = resultOf(response);
    if (!result) {
      if (!(response && 'error' in response && response.error.code === -32601)) return caught.replay(res);
      const { items, next } = folderPage(0);
      return reply(
        next === undefined ? { resources: items } : { resources: items, nextCursor: next },
        caught.jsonHeaders(),
      );
    }
    const out: JsonObject = { ...result };
    delete out.nextCursor;
    if (typeof result.nextCursor === 'string')
      out.nextCursor = writeCursor('resources/list', { at: 'upstream', cursor: result.nextCursor });
    else {
      const { items, next } = folderPage(0);
      out.resources = [...(Array.isArray(result.resources) ? result.resources : []), ...items];
      if (next !== undefined) out.nextCursor = next;
    }
    reply(out, caught.jsonHeaders(), caught.statusCode);
  }

  /** The face's answer to the request, caught, asked for uncompressed. */
  private async caught(req: LegacyRequest): Promise<CapturedResponse> {
    const caught = new CapturedResponse();
    const headers = { ...req.headers };
    delete headers['accept-encoding'];
    await this.face.forward({ ...req, headers, res: caught.asResponse });
    return caught;
  }
}
