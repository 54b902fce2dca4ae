// The admin port: GET /metrics (Prometheus text), /healthz, /readyz and the status page
// (/status, /status.json) on plain node:http, apart from the data port, so scrapes never count
// against limits.maxInFlight, never pass Host/Origin checks meant for MCP clients, and metrics
// and status are not exposed to them. Anything else is 404. It stays up through a drain (readyz
// answers 503) and closes last. With admin.token, /status, /status.json and /metrics ask for it
// (Bearer, or Basic with it as the password, so a browser can show the page); the probes never do.

import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendJson, sendStatus, sendText, type HttpResponse } from '../egress/index.js';
import type { Logger } from '../log.js';
import { listenOn } from './server.js';

export interface AdminOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** admin.token: asked of /status, /status.json and /metrics; empty or undefined: none. */
  token?: string;
}

/** The status page (status/): its view as JSON, the page, and the page's Content-Security-Policy. */
export interface AdminStatus {
  json(): Promise<unknown>;
  html(): Promise<string>;
  policy: string;
}

export interface AdminDeps {
  /** Why not ready (draining, the store unreachable), or undefined when ready. */
  notReady(): string | undefined;
  metrics(): Promise<{ contentType: string; body: string }>;
  status?: AdminStatus;
  log: Logger;
}

export interface AdminServer {
  listen(): Promise<AddressInfo>;
  close(): Promise<void>;
}

/** /readyz, on either port: 200, or 503 saying why not. */
export function sendReadiness(res: HttpResponse, why: string | undefined): void {
  if (why === undefined) sendJson(res, 200, { status: 'ready' });
  else sendJson(res, 503, { status: 'not ready', reason: why });
}

export function createAdmin(opts: AdminOptions, deps: AdminDeps): AdminServer {
  const allowed = tokenCheck(opts.token);
  const server = http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (req, res) => {
    const q = (req.url ?? '/').indexOf('?');
    const path = q >= 0 ? req.url!.slice(0, q) : (req.url ?? '/');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return sendStatus(res, 405, { allow: 'GET, HEAD' });
    }
    if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (path === '/readyz') return sendReadiness(res, deps.notReady());
    const serve = guarded(path, deps);
    if (serve === undefined) return sendText(res, 404, 'text/plain', 'not found\n');
    if (!allowed(req.headers.authorization)) {
      res.setHeader('www-authenticate', ['Bearer realm="causeway-admin"', 'Basic realm="causeway-admin"']);
      return sendText(res, 401, 'text/plain', 'admin.token required\n');
    }
    serve(res).catch((err: unknown) => {
      deps.log.error({ err, path }, 'answering the admin port failed');
      sendStatus(res, 500);
    });
  });
  return {
    listen: () => listenOn(server, opts.port, opts.host, 'admin.port'),
    close: () =>
      new Promise((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

type Serve = (res: http.ServerResponse) => Promise<void>;

/** What answers a path the token guards, or undefined (404). */
function guarded(path: string, deps: AdminDeps): Serve | undefined {
  const { status } = deps;
  switch (path) {
    case '/metrics':
      return async (res) => {
        const m = await deps.metrics();
        sendText(res, 200, m.contentType, m.body);
      };
    case '/status.json':
      return status && (async (res) => sendJson(res, 200, await status.json(), { 'cache-control': 'no-store' }));
    case '/status':
      return status && (async (res) => sendPage(res, await status.html(), status.policy));
    default:
      return undefined;
  }
}

function sendPage(res: http.ServerResponse, html: string, policy: string): void {
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(Buffer.byteLength(html)),
    'content-security-policy': policy,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
  res.end(html);
}

/** Whether an Authorization header carries the token: `Bearer <token>`, or Basic with any user and it as password. */
function tokenCheck(token: string | undefined): (authorization: string | undefined) => boolean {
  if (token === undefined || token === '') return () => true;
  const digest = (v: string) => createHash('sha256').update(v).digest();
  const want = digest(token);
  const same = (given: string) => timingSafeEqual(digest(given), want);
  return (authorization) => {
    const m = /^(Bearer|Basic)\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) return false;
    if (m[1]!.toLowerCase() === 'bearer') return same(m[2]!);
    const basic = Buffer.from(m[2]!, 'base64').toString('utf8');
    const colon = basic.indexOf(':');
    return colon >= 0 && same(basic.slice(colon + 1));
  };
}
