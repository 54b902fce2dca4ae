// The front door: HTTP/1.1 and h2c (prior knowledge) on one cleartext port, told apart by the
// HTTP/2 connection preface; or TLS with ALPN h2 and http/1.1. Connection-level limits are set
// here, for both protocols: header size, concurrent streams, the time to a first request head or
// stream, keep-alive idle time and the number of open connections. Body limits are read-body's.

import { readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, {
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import net, { type AddressInfo, type Socket } from 'node:net';
import { bindError } from '../errors.js';
import { InFlight } from '../in-flight.js';
import { H1Response, H2Response } from '../egress/index.js';

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
  /** Time a connection has for its TLS handshake, protocol preface and first request head (h1) or stream (h2). */
  headersTimeoutMs: number;
  /** A keep-alive connection with nothing in progress is closed after this long. */
  idleTimeoutMs: number;
  maxConnections: number;
}

export type ConnectionCloseReason = 'max_connections' | 'headers_timeout' | 'idle_timeout';

export type ConnectionsToClose = 'goaway' | 'idle' | 'all';

export interface Ingress {
  listen(): Promise<AddressInfo>;
  /** Stops accepting connections; open ones stay until closeConnections(). */
  stopAccepting(): void;
  /**
   * goaway: HTTP/2 sessions get GOAWAY (their open streams finish); idle: that, and idle
   * HTTP/1.1 keep-alive connections are closed; all: every connection is cut.
   */
  closeConnections(which: ConnectionsToClose): void;
  /** Client connections open now. */
  readonly openConnections: number;
  readonly protocol: 'http' | 'https';
}

/** The HTTP/1.1 server knobs Node also honours on an HTTP/2 secure server with allowHTTP1. */
type Http1Timeouts = net.Server & {
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionsCheckingInterval: number;
};

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

export function createIngress(
  opts: IngressOptions,
  handler: IngressHandler,
  onClosed: (reason: ConnectionCloseReason) => void = () => {},
): Ingress {
  const sessions = new InFlight<Http2Session>();
  const sockets = new InFlight<Socket>();
  const h2settings = {
    maxConcurrentStreams: opts.maxConcurrentStreams,
    maxHeaderListSize: opts.maxHeaderBytes,
  };
  const bound = (server: net.Server) => {
    server.maxConnections = opts.maxConnections;
    server.on('drop', () => onClosed('max_connections'));
    server.on('connection', (s: Socket) => {
      const entry = sockets.add(s);
      s.once('close', () => sockets.delete(entry));
      countHeadTimeout(s);
    });
  };
  // Node's HTTP/1.1 parser reports a head that did not arrive in time as an error of its socket.
  const countHeadTimeout = (s: Socket) =>
    s.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') onClosed('headers_timeout');
    });
  const h1Limits = (s: Http1Timeouts) => limitH1(s, opts, onClosed);
  const trackSessions = (s: http2.Http2Server | http2.Http2SecureServer) =>
    s.on('session', (session: Http2Session) => {
      const entry = sessions.add(session);
      session.on('close', () => sessions.delete(entry));
      boundSession(session, opts, onClosed);
    });

  if (opts.tlsCertFile) {
    const secure = http2.createSecureServer(
      {
        cert: readFileSync(opts.tlsCertFile),
        key: readFileSync(opts.tlsKeyFile),
        allowHTTP1: true,
        ALPNProtocols: ['h2', 'http/1.1'],
        settings: h2settings,
        handshakeTimeout: opts.headersTimeoutMs,
        maxHeaderSize: opts.maxHeaderBytes,
        Http1ServerResponse: H1Response,
        Http2ServerResponse: H2Response,
      } as http2.SecureServerOptions,
      handler,
    );
    bound(secure);
    // With allowHTTP1 the secure server runs Node's HTTP/1.1 connection handling and its timeouts.
    const secureH1 = secure as unknown as Http1Timeouts & { closeIdleConnections(): void };
    h1Limits(secureH1);
    trackSessions(secure);
    secure.setTimeout(0);
    // Over TLS the HTTP/1.1 parser reads the TLS socket, not the TCP one counted above.
    secure.on('secureConnection', countHeadTimeout);
    secure.on('tlsClientError', (err: NodeJS.ErrnoException, s: Socket) => {
      if (err.code === 'ERR_TLS_HANDSHAKE_TIMEOUT') onClosed('headers_timeout');
      s.destroy();
    });
    return wrap(secure, 'https', opts, sockets, (which) => {
      for (const s of sessions.values()) which === 'all' ? s.destroy() : s.close();
      if (which === 'all') for (const s of sockets.values()) s.destroy();
      else if (which === 'idle') secureH1.closeIdleConnections();
    });
  }

  const h1 = http.createServer(
    { maxHeaderSize: opts.maxHeaderBytes, ServerResponse: H1Response as typeof http.ServerResponse },
    handler,
  );
  h1Limits(h1 as unknown as Http1Timeouts);
  // h1 never listens itself (the front server hands it sockets), and Node only starts tracking
  // connections (header deadlines, closeIdleConnections, closeAllConnections) on 'listening'.
  h1.emit('listening');
  const h2 = http2.createServer(
    { settings: h2settings, Http2ServerResponse: H2Response as typeof http2.Http2ServerResponse },
    handler,
  );
  trackSessions(h2);
  const front = net.createServer({ noDelay: true }, (socket) =>
    routeConnection(socket, h1, h2, opts.headersTimeoutMs, onClosed),
  );
  bound(front);
  return wrap(front, 'http', opts, sockets, (which) => {
    if (which === 'all') h1.closeAllConnections();
    else if (which === 'idle') h1.closeIdleConnections();
    for (const s of sessions.values()) which === 'all' ? s.destroy() : s.close();
    if (which === 'all') for (const s of sockets.values()) s.destroy();
  });
}

/** An HTTP/1.1 server's head deadline and keep-alive idle time, each closing counted. */
function limitH1(s: Http1Timeouts, opts: IngressOptions, onClosed: (reason: ConnectionCloseReason) => void): void {
  s.headersTimeout = opts.headersTimeoutMs;
  s.requestTimeout = 0;
  s.keepAliveTimeout = opts.idleTimeoutMs;
  // Node checks header deadlines on this interval (30 s by default): check often enough to hold them.
  s.connectionsCheckingInterval = checkingInterval(opts.headersTimeoutMs);
  // A keep-alive socket idle past keepAliveTimeout: Node emits 'timeout' and leaves it to us.
  s.on('timeout', (socket: Socket) => {
    onClosed('idle_timeout');
    socket.destroy();
  });
}

function checkingInterval(headersTimeoutMs: number): number {
  return Math.max(50, Math.min(1_000, Math.floor(headersTimeoutMs / 4)));
}

/**
 * An HTTP/2 session must open its first stream within headersTimeoutMs, and is closed (GOAWAY,
 * open streams finish) once it has had no open stream for idleTimeoutMs.
 */
function boundSession(
  session: Http2Session,
  opts: IngressOptions,
  onClosed: (reason: ConnectionCloseReason) => void,
): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined = setTimeout(() => {
    onClosed('headers_timeout');
    session.destroy();
  }, opts.headersTimeoutMs);
  const idle = () => {
    timer = setTimeout(() => {
      onClosed('idle_timeout');
      session.close();
    }, opts.idleTimeoutMs);
  };
  session.on('stream', (stream: ServerHttp2Stream) => {
    clearTimeout(timer);
    timer = undefined;
    open++;
    stream.once('close', () => {
      if (--open === 0 && !session.closed && !session.destroyed) idle();
    });
  });
  session.once('close', () => clearTimeout(timer));
}

/** Waits for enough bytes to tell an HTTP/2 preface from an HTTP/1.1 request line. */
function routeConnection(
  socket: Socket,
  h1: http.Server,
  h2: http2.Http2Server,
  headersTimeoutMs: number,
  onClosed: (reason: ConnectionCloseReason) => void,
): void {
  let seen = Buffer.alloc(0);
  const timer = setTimeout(() => {
    onClosed('headers_timeout');
    socket.destroy();
  }, headersTimeoutMs);
  const onData = (chunk: Buffer) => {
    seen = Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, H2_PREFACE.length);
    const isH2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (isH2 && seen.length < H2_PREFACE.length) return;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.pause();
    socket.unshift(seen);
    (isH2 ? h2 : h1).emit('connection', socket);
    process.nextTick(() => socket.resume());
  };
  socket.on('data', onData);
  socket.once('close', () => clearTimeout(timer));
  socket.on('error', () => socket.destroy());
}

function wrap(
  server: net.Server,
  protocol: 'http' | 'https',
  opts: IngressOptions,
  sockets: { readonly size: number },
  close: (which: ConnectionsToClose) => void,
): Ingress {
  return {
    protocol,
    get openConnections() {
      return sockets.size;
    },
    listen: () => listenOn(server, opts.port, opts.host, 'listen.port'),
    stopAccepting: () => {
      server.close();
    },
    closeConnections: close,
  };
}

/** Binds a server and resolves with its address, or rejects with the bind error, which names `setting`. */
export function listenOn(
  server: net.Server,
  port: number,
  host: string,
  setting: 'listen.port' | 'admin.port',
): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const failed = (err: unknown) => reject(bindError(setting, host, port, err));
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve(server.address() as AddressInfo);
    });
  });
}
