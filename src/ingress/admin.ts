// The admin port: GET /metrics (Prometheus text), /healthz and /readyz on plain node:http, apart
// from the data port, so scrapes never count against limits.maxInFlight, never pass Host/Origin
// checks meant for MCP clients, and metrics are not exposed to them. Anything else is 404. It stays
// up through a drain (readyz answers 503) and closes last.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendJson, sendStatus, sendText, type HttpResponse } from '../egress/index.js';
import type { Logger } from '../log.js';
import { listenOn } from './server.js';

export interface AdminOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
}

export interface AdminDeps {
  /** Why not ready (draining, the store unreachable), or undefined when ready. */
  notReady(): string | undefined;
  metrics(): Promise<{ contentType: string; body: string }>;
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
  const server = http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (req, res) => {
    const q = (req.url ?? '/').indexOf('?');
    const path = q >= 0 ? req.url!.slice(0, q) : (req.url ?? '/');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return sendStatus(res, 405, { allow: 'GET, HEAD' });
    }
    switch (path) {
      case '/healthz':
        return sendJson(res, 200, { status: 'ok' });
      case '/readyz':
        return sendReadiness(res, deps.notReady());
      case '/metrics':
        deps.metrics().then(
          (m) => sendText(res, 200, m.contentType, m.body),
          (err: unknown) => {
            deps.log.error({ err }, 'collecting metrics failed');
            sendStatus(res, 500);
          },
        );
        return;
      default:
        sendText(res, 404, 'text/plain', 'not found\n');
    }
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
