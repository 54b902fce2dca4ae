// The front door: HTTP/1.1 and h2c (prior knowledge) on one cleartext port, told apart by the
// HTTP/2 connection preface; or TLS with ALPN h2 and http/1.1. Server-level limits (header size,
// concurrent streams, header and request time) are set here; body limits are read-body's.

import { readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';
import net, { type AddressInfo, type Socket } from 'node:net';

export type IngressRequest = IncomingMessage | Http2ServerRequest;
export type IngressResponse = ServerResponse | Http2ServerResponse;
export type IngressHandler = (req: IngressRequest, res: IngressResponse) => void;

export interface IngressOptions {
  host: string;
  port: number;
  tlsCertFile: string;
  tlsKeyFile: string;
  maxHeaderBytes: number;
  maxConcurrentStreams: number;
  /** Time allowed for a request's headers and body to arrive. */
  bodyTimeoutMs: number;
}

export interface Ingress {
  listen(): Promise<AddressInfo>;
  /** Stops accepting connections; open ones stay until closeConnections(). */
  stopAccepting(): void;
  /** Ends idle keep-alive connections and, with force, every connection. */
  closeConnections(force: boolean): void;
  readonly protocol: 'http' | 'https';
}

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

export function createIngress(opts: IngressOptions, handler: IngressHandler): Ingress {
  const sessions = new Set<Http2Session>();
  const h2settings = {
    maxConcurrentStreams: opts.maxConcurrentStreams,
    maxHeaderListSize: opts.maxHeaderBytes,
  };
  const trackSessions = (s: http2.Http2Server | http2.Http2SecureServer) =>
    s.on('session', (session: Http2Session) => {
      sessions.add(session);
      session.on('close', () => sessions.delete(session));
    });

  if (opts.tlsCertFile) {
    const secure = http2.createSecureServer(
      {
        cert: readFileSync(opts.tlsCertFile),
        key: readFileSync(opts.tlsKeyFile),
        allowHTTP1: true,
        ALPNProtocols: ['h2', 'http/1.1'],
        settings: h2settings,
      },
      handler,
    );
    trackSessions(secure);
    secure.setTimeout(0);
    const sockets = new Set<Socket>();
    secure.on('secureConnection', (s: Socket) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    return wrap(secure, 'https', opts, (force) => {
      for (const s of sessions) force ? s.destroy() : s.close();
      if (force) for (const s of sockets) s.destroy();
    });
  }

  const h1 = http.createServer(
    {
      maxHeaderSize: opts.maxHeaderBytes,
      headersTimeout: opts.bodyTimeoutMs,
      requestTimeout: 0,
      keepAliveTimeout: 5_000,
    },
    handler,
  );
  const h2 = http2.createServer({ settings: h2settings }, handler);
  trackSessions(h2);
  const front = net.createServer({ noDelay: true }, (socket) => routeConnection(socket, h1, h2));
  return wrap(front, 'http', opts, (force) => {
    force ? h1.closeAllConnections() : h1.closeIdleConnections();
    for (const s of sessions) force ? s.destroy() : s.close();
  });
}

/** Waits for enough bytes to tell an HTTP/2 preface from an HTTP/1.1 request line. */
function routeConnection(socket: Socket, h1: http.Server, h2: http2.Http2Server): void {
  let seen = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    seen = Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, H2_PREFACE.length);
    const isH2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (isH2 && seen.length < H2_PREFACE.length) return;
    socket.off('data', onData);
    socket.pause();
    socket.unshift(seen);
    (isH2 ? h2 : h1).emit('connection', socket);
    process.nextTick(() => socket.resume());
  };
  socket.on('data', onData);
  socket.on('error', () => socket.destroy());
}

function wrap(
  server: net.Server,
  protocol: 'http' | 'https',
  opts: IngressOptions,
  close: (force: boolean) => void,
): Ingress {
  return {
    protocol,
    listen: () => listenOn(server, opts.port, opts.host),
    stopAccepting: () => {
      server.close();
    },
    closeConnections: close,
  };
}

/** Binds a server and resolves with its address, or rejects with the bind error. */
export function listenOn(server: net.Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}
