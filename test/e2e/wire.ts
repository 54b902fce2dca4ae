// Wire-level helpers for the e2e and ingress tests: a 2026-07-28 request built by hand, sent
// with node:http (fetch will not send a foreign Host, a chunked body on demand or a slow body),
// raw bytes over a socket for what no HTTP client will send, and one assertion helper for the
// JSON-RPC error shape every local rejection must have.

import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import net from 'node:net';
import type { Test } from 'tap';

export const MODERN_VERSION = '2026-07-28';
export const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

/** The required `_meta` of every modern request [BASE]. */
export function modernMeta(extra: JsonObject = {}): JsonObject {
  return {
    [META_VERSION]: MODERN_VERSION,
    [META_CAPABILITIES]: {},
    [META_CLIENT_INFO]: { name: 'causeway-e2e', version: '1.0.0' },
    ...extra,
  };
}

/** A well-formed modern request body. */
export function modernBody(
  method: string,
  params: JsonObject = {},
  id: string | number = 1,
  meta: JsonObject = {},
): JsonObject {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta(meta) } };
}

/** The headers a compliant HTTP client sends with `modernBody(method, params)` [SHTTP]. */
export function modernHeaders(method: string, name?: string): Record<string, string> {
  const h: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN_VERSION,
    'mcp-method': method,
  };
  if (name !== undefined) h['mcp-name'] = name;
  return h;
}

/** A legacy client's initialize (no capabilities), and the headers a legacy POST carries [L-TR]. */
export function legacyInitialize(protocolVersion: string): { body: JsonObject; headers: Record<string, string> } {
  return {
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion, capabilities: {}, clientInfo: { name: 'causeway-e2e', version: '1.0.0' } },
    },
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  };
}

/** Body plus headers for a modern tools/call. */
export function toolCall(name: string, args: JsonObject, id: string | number = 1, meta: JsonObject = {}) {
  return {
    body: modernBody('tools/call', { name, arguments: args }, id, meta),
    headers: modernHeaders('tools/call', name),
  };
}

export interface WireResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The parsed body, or undefined when it is empty or not JSON. */
  json: any;
  ms: number;
}

export interface SendOptions {
  method?: string;
  headers?: OutgoingHttpHeaders;
  /** An object is JSON-encoded; a string or Buffer is sent as is. */
  body?: unknown;
  /** Send the body in these pieces with Transfer-Encoding: chunked (no content-length). */
  chunked?: boolean;
  /** Pieces of the body written this many ms apart (for slow-body tests). */
  trickle?: { pieces: Buffer[]; everyMs: number; contentLength: number };
  path?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

function parse(text: string): any {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** One HTTP/1.1 exchange on a fresh connection (no keep-alive pool between cases). */
export function send(url: string, opts: SendOptions = {}): Promise<WireResponse> {
  const u = new URL(url);
  const started = Date.now();
  const bodyBuf =
    opts.body === undefined
      ? undefined
      : Buffer.isBuffer(opts.body)
        ? opts.body
        : Buffer.from(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body), 'utf8');
  const headers: OutgoingHttpHeaders = { ...(opts.headers ?? {}) };
  if (opts.trickle) headers['content-length'] = String(opts.trickle.contentLength);
  else if (bodyBuf && !opts.chunked && headers['content-length'] === undefined)
    headers['content-length'] = String(bodyBuf.length);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: opts.path ?? u.pathname + u.search,
        method: opts.method ?? 'POST',
        headers,
        agent: false,
        signal: opts.signal,
        timeout: opts.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: parse(text),
            ms: Date.now() - started,
          });
          // An early answer (413, 408) leaves the request body unfinished: stop sending it.
          req.destroy();
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${opts.timeoutMs ?? 10_000} ms`)));
    // The server may answer (413, 408) and close before the whole body is written.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') setTimeout(() => reject(err), 200).unref();
      else reject(err);
    });
    if (opts.trickle) {
      const { pieces, everyMs } = opts.trickle;
      let i = 0;
      const next = () => {
        if (req.destroyed || i >= pieces.length) return;
        req.write(pieces[i++]!);
        setTimeout(next, everyMs).unref();
      };
      next();
      return;
    }
    if (bodyBuf && opts.chunked) {
      const step = 1024;
      for (let i = 0; i < bodyBuf.length; i += step) req.write(bodyBuf.subarray(i, i + step));
      req.end();
      return;
    }
    req.end(bodyBuf);
  });
}

/** POST a modern request (body + headers) to Causeway. */
export function post(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  extra: Omit<SendOptions, 'body' | 'headers'> = {},
) {
  return send(url, { ...extra, method: 'POST', body, headers });
}

/**
 * Raw bytes on a fresh TCP connection; resolves with everything the server wrote before it
 * closed the connection (or before `idleMs` of silence).
 */
export function rawExchange(port: number, bytes: string | Buffer, idleMs = 1500): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(done, idleMs);
    };
    socket.on('connect', () => {
      socket.write(bytes);
      arm();
    });
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      arm();
    });
    socket.on('end', done);
    socket.on('close', done);
    socket.on('error', (err) => (chunks.length > 0 ? done() : reject(err)));
  });
}

/** Status code of a raw HTTP/1.1 response head ("HTTP/1.1 400 Bad Request" -> 400). */
export function rawStatus(raw: string): number | undefined {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
  return m ? Number(m[1]) : undefined;
}

export type Assertions = Pick<Test, 'equal' | 'ok' | 'same' | 'notOk'>;

export interface ExpectedError {
  status: number;
  /** The JSON-RPC code the spec pins; undefined when the spec pins none (body optional). */
  code?: number;
  /** The id to find echoed; null when it could not be read (then `id` must be absent [BASE]). */
  id: string | number | null;
  /** Fields that must be present in error.data, compared with t.same. */
  data?: Record<string, unknown>;
}

/**
 * A local rejection: the status, and a JSON-RPC error body whose id is echoed or absent. When
 * the spec pins no code, a body is optional but, if sent, it must still be a JSON-RPC error.
 */
export function assertRpcError(t: Assertions, res: WireResponse, want: ExpectedError): void {
  t.equal(res.status, want.status, `HTTP ${want.status}`);
  t.notOk(res.text.includes('    at '), 'no stack trace in the body');
  if (want.code === undefined && res.text === '') return;
  const body = res.json as
    | { jsonrpc?: unknown; id?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown } }
    | undefined;
  t.ok(body && typeof body === 'object', `a JSON body (got ${JSON.stringify(res.text.slice(0, 200))})`);
  if (!body) return;
  t.equal(body.jsonrpc, '2.0', 'jsonrpc 2.0');
  t.ok(body.error && typeof body.error.message === 'string', 'error.message is a string');
  t.notOk('result' in body, 'no result beside the error');
  if (want.code !== undefined) t.equal(body.error?.code, want.code, `JSON-RPC ${want.code}`);
  else t.ok(Number.isInteger(body.error?.code), 'error.code is an integer');
  if (want.id === null) t.notOk('id' in body, 'id absent: it could not be read');
  else t.equal(body.id, want.id, 'id echoed');
  if (want.data) {
    const data = body.error?.data as Record<string, unknown> | undefined;
    for (const [k, v] of Object.entries(want.data)) t.same(data?.[k], v, `error.data.${k}`);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The text of the first content block of a tools/call result. */
export function firstText(res: { json?: unknown }): string | undefined {
  const content = (res.json as { result?: { content?: Array<{ text?: string }> } } | undefined)?.result?.content;
  return content?.[0]?.text;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Responses written back to back on one HTTP/1.1 connection (content-length framed only). */
export function parseRawResponses(raw: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = raw;
  while (rest.startsWith('HTTP/1.')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const c = l.indexOf(':');
      if (c > 0) headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    out.push({ status: Number(statusLine!.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}
