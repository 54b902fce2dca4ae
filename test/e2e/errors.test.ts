// Every error a modern client can get from Causeway's front door, over real HTTP, against the
// legacy fixture. Each row states the HTTP status, the JSON-RPC code and whether the id is echoed,
// written from the spec digest (/work/shared/spec/mcp-2026-07-28.md §1, §3), not recorded.
// Where the digest pins no code (405, 403, 413, ...) a body is optional, but if sent it must be a
// JSON-RPC error without id. Afterwards Causeway must still serve, and no body carries a stack.

import net from 'node:net';
import t, { type Test } from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import {
  assertRpcError,
  firstText,
  META_CAPABILITIES,
  META_VERSION,
  MODERN_VERSION,
  modernBody,
  modernHeaders,
  modernMeta,
  post,
  rawExchange,
  rawStatus,
  send,
  toolCall,
  type ExpectedError,
  type JsonObject,
  type WireResponse,
} from './wire.js';

const MAX_BODY = 4096;
const MAX_HEADER = 8192;
const BODY_TIMEOUT_MS = 400;

const upstream = await startLegacyServer();
const causeway = await startCauseway({
  'upstream.url': upstream.url,
  'limits.maxBodyBytes': MAX_BODY,
  'limits.maxHeaderBytes': MAX_HEADER,
  'limits.bodyTimeoutMs': BODY_TIMEOUT_MS,
});
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});
const url = causeway.url;
const bodies: string[] = [];

interface Row {
  name: string;
  /** Spec anchor for the expectation. */
  spec: string;
  send(): Promise<WireResponse>;
  want: ExpectedError;
  also?(t: Test, res: WireResponse): void;
}

// Shorthands: a modern tools/list (no Mcp-Name needed) with one thing changed.
const list = (id: string | number = 1) => ({
  body: modernBody('tools/list', {}, id),
  headers: modernHeaders('tools/list'),
});
const without = (h: Record<string, string>, name: string) =>
  Object.fromEntries(Object.entries(h).filter(([k]) => k !== name));
const removed = (method: string, params: JsonObject = {}, id: string | number = `rm-${method}`): Row => ({
  name: `removed-method-${method.replace(/\//g, '_')}`,
  spec: '§3.2 a method the server does not implement => 404 + -32601',
  send: () => post(url, modernBody(method, params, id), modernHeaders(method)),
  want: { status: 404, code: -32601, id },
});
const big = 'x'.repeat(MAX_BODY * 3);
const tooBig = () => toolCall('echo', { text: big }, 'big');

const rows: Row[] = [
  // JSON-RPC envelope [§1.1]
  {
    name: 'truncated-json',
    spec: '§3.1 -32700 parse error; §1.1 id omitted when it could not be read',
    send: () => post(url, '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{', modernHeaders('tools/list')),
    want: { status: 400, code: -32700, id: null },
  },
  {
    name: 'id-is-an-object',
    spec: '§1.1 id is string|integer; unreadable id => omitted; -32600 invalid request',
    send: () => post(url, { ...list().body, id: { a: 1 } }, list().headers),
    want: { status: 400, code: -32600, id: null },
  },
  {
    name: 'id-is-null',
    spec: '§1.1 id MUST NOT be null',
    send: () => post(url, { ...list().body, id: null }, list().headers),
    want: { status: 400, code: -32600, id: null },
  },
  {
    name: 'method-is-a-number',
    spec: '§1.1 method is a string; -32600 invalid request, id readable so echoed',
    send: () => post(url, { ...list('m-num').body, method: 42 }, list().headers),
    want: { status: 400, code: -32600, id: 'm-num' },
  },
  {
    name: 'params-is-an-array',
    spec: '§1.1 params is { _meta: ... }: the required _meta is missing => -32602 / 400 [§1.2]',
    send: () => post(url, { jsonrpc: '2.0', id: 4, method: 'tools/list', params: [modernMeta()] }, list().headers),
    want: { status: 400, code: -32602, id: 4 },
  },
  {
    name: 'batch-array',
    spec: '§1.1 batching removed: a POST body is a single request; -32600, no single id',
    send: () => post(url, [list(1).body, list(2).body], list().headers),
    want: { status: 400, code: -32600, id: null },
  },
  {
    name: 'notification-posted',
    spec: '§1.3 a notification that is not accepted => an HTTP error status (e.g. 400), body optional and without id',
    send: () =>
      post(
        url,
        { jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: modernMeta() } },
        modernHeaders('notifications/initialized'),
      ),
    want: { status: 400, id: null },
  },
  {
    name: 'response-posted',
    spec: '§1.1 clients never send JSON-RPC responses; the id is readable so it is echoed',
    send: () => post(url, { jsonrpc: '2.0', id: 'resp', result: {} }, list().headers),
    want: { status: 400, id: 'resp' },
  },
  // _meta envelope [§1.2]
  {
    name: 'missing-_meta',
    spec: '§1.2 missing required _meta key => -32602 + 400',
    send: () => post(url, { jsonrpc: '2.0', id: 'no-meta', method: 'tools/list', params: {} }, list().headers),
    want: { status: 400, code: -32602, id: 'no-meta' },
  },
  {
    name: 'missing-protocolVersion',
    spec: '§1.2 missing required _meta key => -32602 + 400',
    send: () =>
      post(
        url,
        { jsonrpc: '2.0', id: 11, method: 'tools/list', params: { _meta: { [META_CAPABILITIES]: {} } } },
        list().headers,
      ),
    want: { status: 400, code: -32602, id: 11 },
  },
  {
    name: 'missing-clientCapabilities',
    spec: '§1.2 missing required _meta key => -32602 + 400',
    send: () =>
      post(
        url,
        { jsonrpc: '2.0', id: 12, method: 'tools/list', params: { _meta: { [META_VERSION]: MODERN_VERSION } } },
        list().headers,
      ),
    want: { status: 400, code: -32602, id: 12 },
  },
  // Version header and negotiation [§1.4, §2.2]
  {
    name: 'version-header-missing',
    spec: '§1.4 required MCP-Protocol-Version missing => 400 + -32020',
    send: () => post(url, list('v-miss').body, without(list().headers, 'mcp-protocol-version')),
    want: { status: 400, code: -32020, id: 'v-miss' },
  },
  {
    name: 'version-header-differs',
    spec: '§1.4 header != _meta version => 400 + -32020',
    send: () => post(url, list('v-diff').body, { ...list().headers, 'mcp-protocol-version': '2025-11-25' }),
    want: { status: 400, code: -32020, id: 'v-diff' },
  },
  {
    name: 'unsupported-version',
    spec: '§2.2 version not implemented => -32022 + 400, data {supported, requested}',
    send: () =>
      post(url, modernBody('tools/list', {}, 'v-old', { [META_VERSION]: '1900-01-01' }), {
        ...list().headers,
        'mcp-protocol-version': '1900-01-01',
      }),
    want: { status: 400, code: -32022, id: 'v-old', data: { requested: '1900-01-01' } },
    also: (t, res) => {
      const supported = res.json?.error?.data?.supported as unknown;
      t.ok(Array.isArray(supported) && supported.includes(MODERN_VERSION), 'data.supported lists 2026-07-28');
      t.notOk(Array.isArray(supported) && supported.includes('1900-01-01'), 'data.supported does not list the request');
    },
  },
  {
    name: 'legacy-version-in-modern-envelope',
    spec: '§2.2 known-but-unsupported version at the modern face => -32022 + 400',
    send: () =>
      post(url, modernBody('tools/list', {}, 'v-legacy', { [META_VERSION]: '2025-11-25' }), {
        ...list().headers,
        'mcp-protocol-version': '2025-11-25',
      }),
    want: { status: 400, code: -32022, id: 'v-legacy', data: { requested: '2025-11-25' } },
    also: (t, res) => t.ok(Array.isArray(res.json?.error?.data?.supported), 'data.supported is an array'),
  },
  // Mirrored headers [§1.4]
  {
    name: 'mcp-method-missing',
    spec: '§1.4 Mcp-Method required on all requests => 400 + -32020',
    send: () => post(url, list('mm-miss').body, without(list().headers, 'mcp-method')),
    want: { status: 400, code: -32020, id: 'mm-miss' },
  },
  {
    name: 'mcp-method-mismatch',
    spec: '§1.4 header does not match the body => 400 + -32020',
    send: () => post(url, list('mm').body, { ...list().headers, 'mcp-method': 'prompts/list' }),
    want: { status: 400, code: -32020, id: 'mm' },
  },
  {
    name: 'mcp-method-wrong-case',
    spec: '§1.4 values are case-sensitive: TOOLS/LIST must be rejected, 400 + -32020',
    send: () => post(url, list('mm-case').body, { ...list().headers, 'mcp-method': 'TOOLS/LIST' }),
    want: { status: 400, code: -32020, id: 'mm-case' },
  },
  {
    name: 'mcp-name-missing',
    spec: '§1.4 Mcp-Name required on tools/call => 400 + -32020',
    send: () =>
      post(url, toolCall('echo', { text: 'a' }, 'mn-miss').body, without(modernHeaders('tools/call'), 'mcp-name')),
    want: { status: 400, code: -32020, id: 'mn-miss' },
  },
  {
    name: 'mcp-name-mismatch',
    spec: '§1.4 Mcp-Name does not match params.name => 400 + -32020',
    send: () => post(url, toolCall('echo', { text: 'a' }, 'mn-diff').body, modernHeaders('tools/call', 'counter')),
    want: { status: 400, code: -32020, id: 'mn-diff' },
  },
  {
    name: 'mcp-name-mismatch-resources-read',
    spec: '§1.4 Mcp-Name mirrors params.uri on resources/read => 400 + -32020',
    send: () =>
      post(
        url,
        modernBody('resources/read', { uri: 'test://static-text' }, 'mn-uri'),
        modernHeaders('resources/read', 'test://other'),
      ),
    want: { status: 400, code: -32020, id: 'mn-uri' },
  },
  {
    name: 'mcp-name-invalid-base64',
    spec: '§1.4 servers MUST decode before comparing; undecodable value => 400 + -32020',
    send: () =>
      post(
        url,
        toolCall('echo', { text: 'a' }, 'mn-b64').body,
        modernHeaders('tools/call', '=?base64?!!not*base64!!?='),
      ),
    want: { status: 400, code: -32020, id: 'mn-b64' },
  },
  {
    name: 'mcp-param-mismatch',
    spec: '§1.4 Mcp-Param-Region does not match arguments.region => 400 + -32020',
    send: () =>
      post(url, toolCall('test_x_mcp_header', { region: 'us-west' }, 'mp-diff').body, {
        ...modernHeaders('tools/call', 'test_x_mcp_header'),
        'mcp-param-region': 'eu-central',
      }),
    want: { status: 400, code: -32020, id: 'mp-diff' },
  },
  {
    name: 'mcp-param-missing',
    spec: '§1.4 a recognized Mcp-Param-* is missing while the body has the value => 400 + -32020',
    send: () =>
      post(
        url,
        toolCall('test_x_mcp_header', { region: 'us-west' }, 'mp-miss').body,
        modernHeaders('tools/call', 'test_x_mcp_header'),
      ),
    want: { status: 400, code: -32020, id: 'mp-miss' },
  },
  {
    name: 'mcp-param-integer-mismatch',
    spec: '§1.4 integers compared numerically; 6 != 5 => 400 + -32020',
    send: () =>
      post(url, toolCall('test_x_mcp_header', { priority: 5 }, 'mp-int').body, {
        ...modernHeaders('tools/call', 'test_x_mcp_header'),
        'mcp-param-priority': '6',
      }),
    want: { status: 400, code: -32020, id: 'mp-int' },
  },
  {
    name: 'mcp-param-boolean-mismatch',
    spec: '§1.4 booleans as true/false; "false" vs true => 400 + -32020',
    send: () =>
      post(url, toolCall('test_x_mcp_header', { verbose: true }, 'mp-bool').body, {
        ...modernHeaders('tools/call', 'test_x_mcp_header'),
        'mcp-param-verbose': 'false',
      }),
    want: { status: 400, code: -32020, id: 'mp-bool' },
  },
  {
    name: 'missing-client-capability',
    spec:
      '§1.2 / §3.1 processing needs an undeclared capability (the tool ' +
      'asks for sampling) => -32021 + 400, data.requiredCapabilities',
    send: () =>
      post(
        url,
        toolCall('test_missing_capability', {}, 'no-cap').body,
        modernHeaders('tools/call', 'test_missing_capability'),
      ),
    want: { status: 400, code: -32021, id: 'no-cap' },
    also: (t, res) =>
      t.ok(res.json?.error?.data?.requiredCapabilities?.sampling, 'data.requiredCapabilities names sampling'),
  },
  // Removed and unknown methods [§3.2]
  removed('ping'),
  {
    ...removed('initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'x', version: '1' },
    }),
    name: 'removed-method-initialize-with-modern-_meta',
  },
  removed('logging/setLevel', { level: 'debug' }),
  removed('resources/subscribe', { uri: 'test://static-text' }),
  removed('resources/unsubscribe', { uri: 'test://static-text' }),
  { ...removed('tools/frobnicate', {}, 99), name: 'unknown-method' },
  // HTTP layer [§1.3, §1.4 "Legacy traffic at a modern-only server"]
  {
    name: 'get-without-session',
    spec: '§1.4 GET at a modern-only server => 405',
    send: () => send(url, { method: 'GET', headers: { accept: 'text/event-stream' } }),
    want: { status: 405, id: null },
  },
  {
    name: 'delete-without-session',
    spec: '§1.4 DELETE at a modern-only server => 405',
    send: () => send(url, { method: 'DELETE' }),
    want: { status: 405, id: null },
  },
  {
    name: 'put',
    spec: '§1.3 the one endpoint supports POST; other methods => 405',
    send: () => send(url, { method: 'PUT', body: list().body, headers: list().headers }),
    want: { status: 405, id: null },
  },
  {
    name: 'foreign-host',
    spec: '§1.3 DNS rebinding: a Host that is not this server => 403, body without id',
    send: () => post(url, list().body, { ...list().headers, host: 'evil.example:80' }),
    want: { status: 403, id: null },
  },
  {
    name: 'foreign-origin',
    spec: '§1.3 Origin present and invalid => 403, body MAY be a JSON-RPC error with no id',
    send: () => post(url, list().body, { ...list().headers, origin: 'http://evil.example' }),
    want: { status: 403, id: null },
  },
  {
    name: 'wrong-content-type',
    spec: '§1.3 requests are application/json => 415 Unsupported Media Type (RFC 9110 §15.5.16)',
    send: () => post(url, JSON.stringify(list().body), { ...list().headers, 'content-type': 'text/plain' }),
    want: { status: 415, id: null },
    also: (t, res) =>
      t.equal(res.headers.connection, 'close', 'the connection is closed rather than the rest of the body read'),
  },
  {
    name: 'body-over-limit-content-length',
    spec: 'limits.maxBodyBytes => 413 Content Too Large (RFC 9110 §15.5.14), body unread so no id',
    send: () => post(url, tooBig().body, tooBig().headers),
    want: { status: 413, id: null },
    also: (t, res) =>
      t.equal(res.headers.connection, 'close', 'the connection is closed rather than the rest of the body read'),
  },
  {
    name: 'body-over-limit-chunked',
    spec: 'limits.maxBodyBytes, no content-length => 413 once the limit is crossed',
    send: () => post(url, tooBig().body, tooBig().headers, { chunked: true }),
    want: { status: 413, id: null },
    also: (t, res) =>
      t.equal(res.headers.connection, 'close', 'the connection is closed rather than the rest of the body read'),
  },
  {
    name: 'header-block-over-limit',
    spec: 'limits.maxHeaderBytes => 431 (RFC 6585 §5)',
    send: () => post(url, list().body, { ...list().headers, 'x-padding': 'p'.repeat(MAX_HEADER * 2) }),
    want: { status: 431, id: null },
  },
  {
    name: 'body-slower-than-timeout',
    spec: 'limits.bodyTimeoutMs => 408 Request Timeout (RFC 9110 §15.5.9)',
    send: () => {
      const body = Buffer.from(JSON.stringify(list('slow-body').body));
      const pieces: Buffer[] = [];
      for (let i = 0; i < body.length; i += 16) pieces.push(body.subarray(i, i + 16));
      return send(url, {
        method: 'POST',
        headers: list().headers,
        trickle: { pieces, everyMs: 150, contentLength: body.length },
        timeoutMs: 5000,
      });
    },
    want: { status: 408, id: null },
    also: (t, res) => {
      t.ok(res.ms >= BODY_TIMEOUT_MS - 50, `408 only once limits.bodyTimeoutMs had passed (${res.ms} ms)`);
      t.equal(res.headers.connection, 'close', 'the connection is closed rather than the rest of the body waited for');
    },
  },
  {
    name: 'unknown-path',
    spec: 'only the MCP endpoint path is served => 404',
    send: () => send(url, { path: '/not-mcp', body: list().body, headers: list().headers }),
    want: { status: 404, id: null },
    also: (t, res) => t.not(res.json?.error?.code, -32601, 'not -32601: that would claim a missing method'),
  },
  // In-band errors from the upstream stay in-band [style habit 1]; the digest pins no status.
  {
    name: 'resource-not-found',
    spec: '§3.1 resource not found is -32602 with data.uri (was -32002, never emitted)',
    send: () =>
      post(
        url,
        modernBody('resources/read', { uri: 'test://nope' }, 'rnf'),
        modernHeaders('resources/read', 'test://nope'),
      ),
    want: { status: 200, code: -32602, id: 'rnf', data: { uri: 'test://nope' } },
    also: (t, res) =>
      t.equal(
        res.json?.error?.message,
        'Resource not found: test://nope',
        'a message of its own, not the SDK\'s "MCP error -32002: ..."',
      ),
  },
];

for (const row of rows) {
  t.test(`modern_client-to-causeway-error-${row.name}`, async (t) => {
    t.comment(row.spec);
    const res = await row.send();
    bodies.push(res.text);
    assertRpcError(t, res, row.want);
    row.also?.(t, res);
  });
}

// Controls: the same shapes done right succeed, so each row above fails for its own reason.
t.test('modern_client-to-legacy_upstream-controls', async (t) => {
  const ok = await post(url, list('ctl').body, list().headers);
  t.equal(ok.status, 200, 'tools/list');
  t.equal(ok.json?.id, 'ctl');
  const b64 = await post(
    url,
    toolCall('echo', { text: 'b64' }).body,
    modernHeaders('tools/call', '=?base64?ZWNobw==?='),
  );
  t.equal(b64.status, 200, 'Mcp-Name in base64 form is decoded before comparing');
  t.equal(firstText(b64), 'b64');
  const padded = await post(url, toolCall('echo', { text: 'ws' }).body, {
    ...modernHeaders('tools/call'),
    'mcp-name': '  echo  ',
  });
  t.equal(padded.status, 200, 'surrounding whitespace is trimmed');
  const params = await post(
    url,
    toolCall('test_x_mcp_header', { region: 'us-west', priority: 5, verbose: true, query: 'q' }).body,
    {
      ...modernHeaders('tools/call', 'test_x_mcp_header'),
      'mcp-param-region': 'us-west',
      'mcp-param-priority': '5.0',
      'mcp-param-verbose': 'true',
    },
  );
  t.equal(params.status, 200, 'matching Mcp-Param-* (5.0 == 5 numerically)');
  t.equal(firstText(params), 'region=us-west, priority=5, verbose=true');
  const nullArg = await post(
    url,
    toolCall('test_x_mcp_header', { region: null }).body,
    modernHeaders('tools/call', 'test_x_mcp_header'),
  );
  t.not(nullArg.json?.error?.code, -32020, 'a null argument needs no Mcp-Param header');
});

// A header value with a bare CR or LF: fetch refuses to send it, so raw bytes. The parser must
// answer 400 and close that connection only.
for (const [name, value] of [
  ['bare-cr', 'ec\rho'],
  ['bare-lf', 'ec\nho'],
  ['crlf-injection', 'echo\r\nX-Injected'],
] as const) {
  t.test(`raw_client-to-causeway-error-header-${name}`, async (t) => {
    const body = JSON.stringify(toolCall('echo', { text: 'raw' }).body);
    const head = [
      'POST /mcp HTTP/1.1',
      `Host: 127.0.0.1:${causeway.port}`,
      'Content-Type: application/json',
      'Accept: application/json, text/event-stream',
      `MCP-Protocol-Version: ${MODERN_VERSION}`,
      'Mcp-Method: tools/call',
      `Mcp-Name: ${value}`,
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
    ].join('\r\n');
    const raw = await rawExchange(causeway.port, `${head}\r\n\r\n${body}`);
    bodies.push(raw);
    t.equal(rawStatus(raw), 400, `400 for a header with ${name}`);
    const after = await post(url, toolCall('echo', { text: 'still-up' }).body, modernHeaders('tools/call', 'echo'));
    t.equal(firstText(after), 'still-up', 'the server is still up');
  });
}

// A refused body is not read on: a client declaring 100 MB (or chunking forever) after its 413 must
// not keep the connection busy. Regression for the front door draining refused bodies unbounded.
for (const [path, framing, status] of [
  ['/mcp', 'Content-Length: 104857600', 413],
  ['/mcp', 'Transfer-Encoding: chunked', 413],
  ['/not-mcp', 'Content-Length: 104857600', 404],
] as const) {
  t.test(
    `raw_client-to-causeway-refused-body-not-read-on-${status}-${framing.split(':')[0]!.toLowerCase()}`,
    async (t) => {
      const socket = net.connect(causeway.port, '127.0.0.1');
      t.teardown(() => socket.destroy());
      let received = '';
      let written = 0;
      socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
      socket.on('error', () => undefined);
      const closed = new Promise<boolean>((resolve) => {
        socket.on('close', () => resolve(true));
        setTimeout(() => resolve(false), 3000).unref();
      });
      const head = [
        `POST ${path} HTTP/1.1`,
        `Host: 127.0.0.1:${causeway.port}`,
        'Content-Type: application/json',
        framing,
        '',
        '',
      ];
      socket.write(head.join('\r\n'));
      const piece = 'x'.repeat(16 * 1024);
      const pump = setInterval(() => {
        if (socket.destroyed) return;
        socket.write(framing.startsWith('Transfer') ? `${piece.length.toString(16)}\r\n${piece}\r\n` : piece);
        written += piece.length;
      }, 20);
      const wasClosed = await closed;
      clearInterval(pump);
      t.equal(rawStatus(received), status, `${status}`);
      t.ok(wasClosed, `the server closed the connection (after ${written} bytes written)`);
    },
  );
}

t.test('causeway-survives-the-table', async (t) => {
  const res = await post(url, toolCall('echo', { text: 'after' }, 'after').body, modernHeaders('tools/call', 'echo'));
  t.equal(res.status, 200);
  t.equal(res.json?.id, 'after');
  t.equal(firstText(res), 'after');
  t.equal(res.json?.result?.resultType, 'complete');
  t.equal(bodies.filter((b) => b.includes('    at ')).length, 0, `no stack trace in any of ${bodies.length} responses`);
  t.notOk(
    causeway.logs.some((l) => l.includes('"level":50') && l.includes('unhandled')),
    'no unhandled error logged',
  );
});
