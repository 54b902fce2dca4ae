// HTTP/2 client helpers for the ingress tests: one request on a session, the peer's SETTINGS,
// and a self-signed certificate made at test time with openssl.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2, {
  type ClientHttp2Session,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type Settings,
} from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface H2Response {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: any;
}

export function h2Request(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  body?: unknown,
): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let resHeaders: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      resHeaders = h;
      status = Number(h[':status']);
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = text === '' ? undefined : JSON.parse(text);
      } catch {
        json = undefined;
      }
      resolve({ status, headers: resHeaders, text, json });
    });
    stream.on('error', reject);
    if (body !== undefined) stream.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
}

/** A POST of a modern body on an h2 session. */
export function h2Post(
  session: ClientHttp2Session,
  path: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<H2Response> {
  return h2Request(session, { ':method': 'POST', ':path': path, ...headers }, body);
}

export interface H2Connection {
  session: ClientHttp2Session;
  /** The first SETTINGS frame the server sent. */
  settings: Promise<Settings>;
}

export function connectH2(authority: string, options: http2.SecureClientSessionOptions = {}): Promise<H2Connection> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(authority, options);
    const settings = new Promise<Settings>((r) => session.once('remoteSettings', r));
    session.once('connect', () => resolve({ session, settings }));
    session.once('error', reject);
  });
}

export interface TestCert {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
  cleanup(): void;
}

/** A P-256 self-signed certificate for 127.0.0.1 and localhost; undefined when openssl is absent. */
export function selfSignedCert(): TestCert | undefined {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), 'causeway-tls-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  return {
    cert: readFileSync(certFile, 'utf8'),
    key: readFileSync(keyFile, 'utf8'),
    certFile,
    keyFile,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
