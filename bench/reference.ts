// What the two reference processes (node-floor.ts, node-translator.ts) share: their command
// line, their listener, and the answer when the upstream cannot be reached.

import http from 'node:http';

export function arg(name: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (v === undefined) throw new Error(`${name} is required`);
  return v;
}

export function badGateway(res: http.ServerResponse): void {
  res.writeHead(502, { 'content-length': '0' });
  res.end();
}

/** Serves on 127.0.0.1:--port until SIGTERM. */
export function serve(handler: http.RequestListener): void {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 65_000;
  server.listen(Number(arg('--port')), '127.0.0.1');
  process.once('SIGTERM', () => process.exit(0));
}
