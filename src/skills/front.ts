// The skills extension [SKILLS] on a mount, for modern clients, in front of its upstream or
// federation: server/discover gains the extension (and `resources`, which it requires);
// skills/list, skills/get and resources/directory/read are answered from the folder;
// resources/read of a skill file is answered from it; resources/list is the upstream's pages
// with the skill files after them. A skill:// URI that could only reach outside a skill is
// refused (-32602), as is one in the folder's namespace that names nothing. An upstream that
// speaks 2026-07-28 and has skills of its own keeps them: its skills/list pages follow the
// folder's (a skill named as one of the folder's is left out, and logged), and what the folder
// does not serve goes to it.

import { withResultMeta, type CacheHint } from '../dialect/index.js';
import { sendCausewayError, sendJson } from '../egress/index.js';
import { CausewayError, causewayError, toCausewayError } from '../errors.js';
import { isObject, type JsonObject, type JsonValue } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import type { AnswerOutcome, UpstreamMetrics } from '../metrics/index.js';
import type { ModernExchange, MountFront } from '../routing/index.js';
import { CapturedResponse, resultOf } from './capture.js';
import { childOf, contentsOf, resourceOf } from './content.js';
import { pageOf, readCursor, writeCursor } from './cursor.js';
import type { SkillFolder } from './folder.js';
import { lookupKey, SKILL_SCHEME } from './uri.js';

export const SKILLS_EXTENSION = 'io.modelcontextprotocol/skills';

export interface SkillsFrontOptions {
  folder: SkillFolder;
  /** URI prefixes of the folder's roots ('' for none): skill:// URIs under them are the folder's to answer. */
  prefixes: readonly string[];
  pageSize: number;
  /** The mount's cache policy for a method; skills answers are public whatever it says. */
  cacheHint(method: string): CacheHint;
  serverInfo: JsonObject;
  /** Whether the upstream speaks 2026-07-28 now (and so may serve skills of its own). */
  upstreamModern(): boolean;
  /** The mount's: counts the answers the folder gives alone (those it adds to are counted by the rest of the mount). */
  metrics: UpstreamMetrics;
  log: Logger;
}

type Next = (ex: ModernExchange) => Promise<void>;

export class SkillsFront implements MountFront {
  private readonly shadowed = new Set<string>();

  constructor(private readonly opts: SkillsFrontOptions) {}

  serves(method: string): boolean {
    return this.served(method) !== undefined;
  }

  async serve(ex: ModernExchange, next: Next): Promise<void> {
    const { method } = ex.request;
    const serve = this.served(method);
    if (serve === undefined) return next(ex);
    const started = performance.now();
    let handedOn = false;
    let outcome: AnswerOutcome = 'ok';
    try {
      await serve(ex, (e) => {
        handedOn = true;
        return next(e);
      });
    } catch (err) {
      outcome = this.fail(ex, err);
    } finally {
      if (!handedOn)
        this.opts.metrics.answered(
          method,
          undefined,
          outcome === 'ok' ? 'complete' : 'error',
          outcome,
          (performance.now() - started) / 1000,
        );
    }
  }

  /** What the folder does with a method: answers it, adds to its answer, or (undefined) leaves it to the mount. */
  private served(method: string): ((ex: ModernExchange, next: Next) => Promise<void>) | undefined {
    switch (method) {
      case 'server/discover':
        return (ex, next) => this.discover(ex, next);
      case 'skills/list':
        return (ex, next) => this.list(ex, next);
      case 'skills/get':
        return (ex, next) => this.get(ex, next);
      case 'resources/directory/read':
        return (ex, next) => this.directory(ex, next);
      case 'resources/read':
        return (ex, next) => this.read(ex, next);
      case 'resources/list':
        return (ex, next) => this.resources(ex, next);
      default:
        return undefined;
    }
  }

  private async discover(ex: ModernExchange, next: Next): Promise<void> {
    const caught = await this.caught(ex, next);
    const response = caught.response(ex.request.id);
    const result = resultOf(response);
    if (!result) return caught.replay(ex.res);
    const caps = isObject(result.capabilities) ? result.capabilities : {};
    const extensions = isObject(caps.extensions) ? caps.extensions : {};
    const capabilities = {
      ...caps,
      resources: isObject(caps.resources) ? caps.resources : {},
      extensions: { ...extensions, [SKILLS_EXTENSION]: { directoryRead: true } },
    };
    sendJson(ex.res, caught.statusCode, { ...response, result: { ...result, capabilities } }, caught.jsonHeaders());
  }

  /** The folder's skills, then the upstream's when it has the extension itself. */
  private async list(ex: ModernExchange, next: Next): Promise<void> {
    const { request } = ex;
    const cursor = readCursor(request.params.cursor, request.method);
    const catalog = this.opts.folder.current;
    const entries = catalog.list;
    if (cursor?.at !== 'upstream') {
      const { page, next: more } = pageOf(entries, cursor?.offset ?? 0, this.opts.pageSize, request.method);
      const result: JsonObject = { skills: page.map((s) => catalog.entries.get(s.uri)!) };
      const after =
        more ??
        (this.opts.upstreamModern() ? writeCursor(request.method, { at: 'upstream', cursor: undefined }) : undefined);
      if (after !== undefined) result.nextCursor = after;
      if (page.length > 0 || after === undefined || !this.opts.upstreamModern()) return this.answer(ex, result, true);
    }
    const upstreamCursor = cursor?.at === 'upstream' ? cursor.cursor : undefined;
    const caught = await this.caught(ex, next, upstreamCursor);
    const response = caught.response(request.id);
    const result = resultOf(response);
    // An upstream without the extension has no skills to add.
    if (!result)
      return response && 'error' in response && response.error.code === -32601
        ? this.answer(ex, { skills: [] }, true)
        : caught.replay(ex.res);
    const names = new Set(entries.map((s) => s.name));
    const uris = new Set(catalog.skills.keys());
    const skills = (Array.isArray(result.skills) ? result.skills : []).filter((s) => {
      if (!isObject(s) || !isObject(s.frontmatter)) return false;
      const name = String(s.frontmatter.name);
      if (!names.has(name) && !uris.has(String(s.uri))) return true;
      if (!this.shadowed.has(name)) {
        this.shadowed.add(name);
        this.opts.log.warn(
          { skill: name, uri: s.uri },
          "the upstream's skill is left out: the skills folder has one of that name",
        );
      }
      return false;
    });
    const out: JsonObject = { ...result, skills };
    if (typeof result.nextCursor === 'string')
      out.nextCursor = writeCursor(request.method, { at: 'upstream', cursor: result.nextCursor });
    sendJson(
      ex.res,
      caught.statusCode,
      { ...response, result: privately(out, visible(ex, out)) },
      caught.jsonHeaders(),
    );
  }

  private async get(ex: ModernExchange, next: Next): Promise<void> {
    const uri = uriParam(ex.request.params);
    const found = this.find(uri);
    const skill = found === undefined ? undefined : this.opts.folder.current.entries.get(found);
    if (skill) return this.answer(ex, { skill }, true);
    if (this.opts.upstreamModern()) return next(ex);
    throw causewayError('invalid_params', `No skill is served at ${uri}`);
  }

  private async directory(ex: ModernExchange, next: Next): Promise<void> {
    const { request } = ex;
    const uri = uriParam(request.params);
    const cursor = readCursor(request.params.cursor, request.method);
    const key = this.find(uri);
    const catalog = this.opts.folder.current;
    const children = key === undefined ? undefined : catalog.dirs.get(key);
    if (children) {
      const { page, next: more } = pageOf(
        children,
        cursor?.at === 'folder' ? cursor.offset : 0,
        this.opts.pageSize,
        request.method,
      );
      return this.answer(
        ex,
        more === undefined ? { resources: page.map(childOf) } : { resources: page.map(childOf), nextCursor: more },
        true,
      );
    }
    if (this.opts.upstreamModern()) return next(ex);
    if (key !== undefined && catalog.files.has(key))
      throw causewayError('invalid_params', `${uri} is not a directory resource`);
    throw causewayError('invalid_params', `No directory is served at ${uri}`, { uri });
  }

  private async read(ex: ModernExchange, next: Next): Promise<void> {
    const uri = uriParam(ex.request.params);
    const key = this.find(uri);
    const hit = key === undefined ? undefined : this.opts.folder.current.files.get(key);
    if (hit) return this.answer(ex, { contents: [contentsOf(hit.file)] }, true);
    if (key === undefined || this.opts.upstreamModern() || !this.owns(key)) return next(ex);
    throw causewayError('invalid_params', `Resource not found: ${uri}`, { uri });
  }

  /** The upstream's resources, then the skill files (or only those, when the upstream has no resources). */
  private async resources(ex: ModernExchange, next: Next): Promise<void> {
    const { request } = ex;
    const cursor = readCursor(request.params.cursor, request.method);
    const files = this.opts.folder.current.fileList;
    const folderPage = (offset: number): { items: JsonObject[]; next: string | undefined } => {
      const { page, next: more } = pageOf(files, offset, this.opts.pageSize, request.method);
      return { items: page.map(({ file, skill }) => resourceOf(file, skill)), next: more };
    };
    if (cursor?.at === 'folder') {
      const { items, next: more } = folderPage(cursor.offset);
      return this.answer(ex, more === undefined ? { resources: items } : { resources: items, nextCursor: more }, false);
    }
    const caught = await this.caught(ex, next, cursor?.cursor);
    const response = caught.response(request.id);
    const result = resultOf(response);
    if (!result) {
      if (!(response && 'error' in response && response.error.code === -32601)) return caught.replay(ex.res);
      const { items, next: more } = folderPage(0);
      return this.answer(ex, more === undefined ? { resources: items } : { resources: items, nextCursor: more }, false);
    }
    const own = Array.isArray(result.resources) ? result.resources : [];
    const out: JsonObject = { ...result };
    delete out.nextCursor;
    if (typeof result.nextCursor === 'string') {
      out.nextCursor = writeCursor(request.method, { at: 'upstream', cursor: result.nextCursor });
    } else {
      const { items, next: more } = folderPage(0);
      out.resources = [...own, ...items];
      if (more !== undefined) out.nextCursor = more;
    }
    sendJson(
      ex.res,
      caught.statusCode,
      { ...response, result: privately(out, visible(ex, out)) },
      caught.jsonHeaders(),
    );
  }

  /** The answer `next` gives, caught; with `cursor` set, to the request with that cursor instead of its own. */
  private async caught(ex: ModernExchange, next: Next, cursor?: string | undefined): Promise<CapturedResponse> {
    const caught = new CapturedResponse();
    const params = { ...ex.request.params };
    delete params.cursor;
    if (cursor !== undefined) params.cursor = cursor;
    const rewritten = 'cursor' in ex.request.params || cursor !== undefined;
    await next({
      ...ex,
      res: caught.asResponse,
      ...(rewritten ? { request: { ...ex.request, params }, body: undefined } : {}),
    });
    return caught;
  }

  /**
   * The lookup key of a skill URI the folder may serve; undefined for a URI not in skill://; a refusal for one that
   * reaches outside.
   */
  private find(uri: string): string | undefined {
    const look = lookupKey(uri);
    if (look.ok) return look.key;
    if (look.foreign) return undefined;
    throw causewayError('invalid_params', `${uri} is refused: ${look.reason}`, { uri });
  }

  /** Whether a skill URI is in the folder's namespace (under one of its prefixes). */
  private owns(key: string): boolean {
    return this.opts.prefixes.some((p) => p === '' || key.startsWith(`${SKILL_SCHEME}${p}/`));
  }

  private answer(ex: ModernExchange, result: JsonObject, skills: boolean): void {
    const hint = this.opts.cacheHint(ex.request.method);
    // The folder answers everyone alike: public whatever the upstream's policy [CACHE].
    let cache: CacheHint = skills ? { ttlMs: hint.ttlMs, cacheScope: 'public' } : hint;
    const seen = visible(ex, result);
    if (seen !== result) cache = { ...cache, cacheScope: 'private' };
    if (ex.notes) ex.notes.resultType = 'complete';
    sendJson(ex.res, 200, {
      jsonrpc: '2.0',
      id: ex.request.id,
      result: withResultMeta(seen, { serverInfo: this.opts.serverInfo, cache }),
    });
  }

  private fail(ex: ModernExchange, err: unknown): AnswerOutcome {
    if (ex.signal.aborted) return 'cancelled';
    const e = toCausewayError(err);
    if (!(err instanceof CausewayError)) ex.log.error({ err }, 'skills request failed');
    if (ex.notes) ex.notes.code = e.code;
    sendCausewayError(ex.res, e, ex.request.id);
    return e.reason;
  }
}

/** A list some of which the token may not see is private to it, whatever the cache policy. */
function privately(all: JsonObject, seen: JsonObject): JsonObject {
  return seen === all || !('cacheScope' in seen) ? seen : { ...seen, cacheScope: 'private' };
}

/**
 * A list as the request's token may see it [auth.rules]: resources/list items, and skills/list
 * entries, by whether their URI (a skill's SKILL.md) may be read. The list itself when nothing is hidden.
 */
function visible(ex: ModernExchange, result: JsonObject): JsonObject {
  const key =
    ex.request.method === 'skills/list' ? 'skills' : ex.request.method === 'resources/list' ? 'resources' : undefined;
  const access = ex.access;
  if (key === undefined || access === undefined || !access.mayHide('resources/list') || !Array.isArray(result[key]))
    return result;
  const kept = access.filterList('resources/list', { resources: result[key] }).resources;
  return { ...result, [key]: kept ?? [] };
}

function uriParam(params: JsonObject): string {
  const uri: JsonValue | undefined = params.uri;
  if (typeof uri !== 'string') throw causewayError('invalid_params', 'params.uri must be a string');
  return uri;
}
