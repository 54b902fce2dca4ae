// The front door's walk after the body read: the read pauses the walk and its end carries it on
// (PAUSED, Visit.carryOn). A step after it that throws, or whose promise rejects, must still get
// the request the spec's internal error (500, -32603, no stack trace) and a log line, never an
// uncaught exception. The stage that fails here is the mount's legacy face, made to fail on
// purpose; everything before it is the real front door with the default settings.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import { loadConfig } from '../../src/config/index.js';
import { originPolicy } from '../../src/envelope/origin.js';
import { frontDoor } from '../../src/ingress/front-door.js';
import type { Mount } from '../../src/ingress/mount.js';
import { createLogger } from '../../src/log.js';

type Forward = () => Promise<void>;

async function frontDoorWith(forward: Forward) {
  const config = loadConfig(['--upstream.url', 'http://127.0.0.1:1/mcp'], {});
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const mount = { path: '/mcp', passthrough: { forward }, upstream: {} } as unknown as Mount;
  const handler = frontDoor({
    mounts: new Map([['/mcp', mount]]),
    maxHeaderBytes: config.limits.maxHeaderBytes,
    maxInFlight: config.limits.maxInFlight,
    body: { maxBytes: config.limits.maxBodyBytes, timeoutMs: config.limits.bodyTimeoutMs },
    json: { maxDepth: config.limits.maxJsonDepth, maxItems: config.limits.maxJsonItems },
    origin: originPolicy('127.0.0.1', [], []),
    auth: undefined,
    signIn: undefined,
    principal: config.principal,
    rate: undefined,
    quotas: undefined,
    log: createLogger('info', sink),
    notReady: () => undefined,
    closing: () => false,
    observe: () => undefined,
    accessSample: 0,
    audit: false,
    inFlight: { count: 0 },
  });
  const server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, lines };
}

/** A legacy initialize: the walk reads its body, then hands it to the mount's legacy face. */
async function initialize(url: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
  return { status: res.status, text: await res.text() };
}

const cases: Array<[string, Forward]> = [
  [
    'a step after the body read that throws',
    () => {
      throw new Error('boom: thrown');
    },
  ],
  ['a step after the body read whose promise rejects', () => Promise.reject(new Error('boom: rejected'))],
];

for (const [name, forward] of cases) {
  t.test(name, async (t) => {
    const door = await frontDoorWith(forward);
    const { status, text } = await initialize(door.url);
    t.equal(status, 500, 'answered 500');
    const body = JSON.parse(text) as { id?: unknown; error?: { code?: number; message?: string } };
    t.equal(body.error?.code, -32603, 'the JSON-RPC internal error');
    t.notOk(text.includes('boom'), 'the thrown message is not sent');
    t.notOk(text.includes('    at '), 'no stack trace');
    t.ok(
      door.lines.some((l) => l.includes('unhandled error at the front door') && l.includes('boom')),
      'logged with the error',
    );
    // The same server answers the next request: nothing was left broken.
    t.equal((await initialize(door.url)).status, 500, 'a second request is answered the same way');
  });
}
