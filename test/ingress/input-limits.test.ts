// Bad input costs nothing: JSON nested too deep or holding too many items is refused at parse
// time (400, the id echoed when it could be read) before any recursive walk; a malformed
// clientCapabilities is refused before it reaches an upstream initialize; a request needs exactly
// one valid Host. Real upstream (the SDK fixture, as a child process so that its own work on a
// big body does not count against Causeway's event loop).

import t from 'tap';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { spawnFixture } from '../e2e/upstreams.js';
import { startCauseway } from '../helpers/causeway.js';
import {
  assertRpcError,
  META_CAPABILITIES,
  modernBody,
  modernHeaders,
  post,
  rawExchange,
  rawStatus,
  toolCall,
  type JsonObject,
} from '../e2e/wire.js';

const fixture = await spawnFixture();
const causeway = await startCauseway({ 'upstream.url': fixture.url });
t.teardown(async () => {
  await causeway.close();
  await fixture.stop();
});

/** `depth` levels of arrays around a number, as raw JSON text. */
const deepArray = (depth: number) => '['.repeat(depth) + '1' + ']'.repeat(depth);
const deepObject = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

/** A tools/call body as text, with `slot` replaced by raw JSON. */
function callText(argumentsJson: string, metaJson = '{}', capabilitiesJson = '{}'): string {
  return (
    `{"jsonrpc":"2.0","id":"deep-1","method":"tools/call","params":{"name":"echo","arguments":${argumentsJson},` +
    `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
    `"io.modelcontextprotocol/clientCapabilities":${capabilitiesJson},"x.example/extra":${metaJson}}}}`
  );
}

const noClientFaultErrors = (t: Tap, from: number) => {
  const lines = causeway.logs
    .slice(from)
    .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { stack?: string } });
  t.same(
    lines.filter((l) => l.level >= 50 || l.err?.stack !== undefined).map((l) => l.msg),
    [],
    'no error-level line or stack trace logged for a client fault',
  );
};
type Tap = Pick<typeof t, 'same' | 'equal' | 'ok'>;

t.test(
  '100k-deep nesting in arguments, _meta and clientCapabilities: 400 -32600, id echoed, nothing upstream',
  async (t) => {
    const before = (await fixture.stats()).requestsByMethod;
    const logsFrom = causeway.logs.length;
    const cases: Array<[string, string]> = [
      ['arguments (arrays)', callText(`{"text":${deepArray(100_000)}}`)],
      ['arguments (objects)', callText(`{"text":${deepObject(100_000)}}`)],
      ['_meta', callText('{"text":"x"}', deepArray(100_000))],
      ['clientCapabilities', callText('{"text":"x"}', '{}', `{"experimental":{"x":${deepObject(100_000)}}}`)],
    ];
    for (const [where, text] of cases) {
      const started = performance.now();
      const res = await post(causeway.url, text, modernHeaders('tools/call', 'echo'));
      const ms = performance.now() - started;
      assertRpcError(t, res, { status: 400, code: -32600, id: 'deep-1' });
      t.match(res.json?.error?.message, /deeper than 64/, `${where}: the message names the limit`);
      // The message names the limit: the reader stopped at level 65, it did not walk 100k levels.
      t.comment(`${where}: answered in ${ms.toFixed(1)} ms`);
    }
    t.same((await fixture.stats()).requestsByMethod, before, 'the upstream saw none of them');
    noClientFaultErrors(t, logsFrom);
  },
);

t.test('nesting at the limit passes; one more level does not', async (t) => {
  // The envelope itself is 3 levels deep (body, params, arguments); text then adds its own.
  const at = await post(
    causeway.url,
    callText(`{"text":"x","n":${deepArray(64 - 3)}}`),
    modernHeaders('tools/call', 'echo'),
  );
  t.equal(at.status, 200, 'depth 64 is accepted');
  const over = await post(
    causeway.url,
    callText(`{"text":"x","n":${deepArray(64 - 2)}}`),
    modernHeaders('tools/call', 'echo'),
  );
  assertRpcError(t, over, { status: 400, code: -32600, id: 'deep-1' });
});

t.test('deep JSON that does not parse is a parse error; a legacy session does not get it forwarded', async (t) => {
  const res = await post(causeway.url, deepArray(100_000).slice(0, -1), modernHeaders('tools/call', 'echo'));
  assertRpcError(t, res, { status: 400, code: -32700, id: null });
  const legacy = await post(causeway.url, deepArray(100_000), {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': 'any',
  });
  assertRpcError(t, legacy, { status: 400, code: -32600, id: null });
});

t.test('a body with more items than limits.maxJsonItems is refused; a wide body under it is answered', async (t) => {
  const wide = (n: number): JsonObject => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
  const over = toolCall('echo', { text: 'x', extra: wide(110_000) }, 'wide-1');
  const overText = JSON.stringify(over.body);
  t.ok(overText.length < 2 ** 20 * 1.6, 'the over-wide body is about a megabyte');
  const big = await startCauseway({ 'upstream.url': fixture.url, 'limits.maxBodyBytes': 2 * 2 ** 20 });
  t.teardown(() => big.close());
  const refused = await post(big.url, overText, over.headers);
  assertRpcError(t, refused, { status: 400, code: -32600, id: 'wide-1' });
  t.match(refused.json?.error?.message, /more than 100000 items/);

  // Under both limits: ~0.85 MB in 60k members.
  const under = toolCall('echo', { text: 'wide', extra: wide(60_000) }, 'wide-2');
  const underText = JSON.stringify(under.body);
  t.ok(underText.length < 2 ** 20, `under the body limit (${underText.length} bytes)`);
  await post(causeway.url, toolCall('echo', { text: 'warm' }).body, toolCall('echo', { text: 'warm' }).headers);
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const res = await post(causeway.url, underText, under.headers);
  delay.disable();
  t.equal(res.status, 200, 'the wide call is answered');
  t.match(res.text, /wide/);
  const maxMs = delay.max / 1e6;
  t.comment(
    `event-loop delay while serving it: max ${maxMs.toFixed(1)} ` +
      `ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`,
  );
  // This process runs Causeway and the test client: about 90 ms cold and under 15 ms warm on an
  // idle machine. A figure, not an assertion: on a busy machine any bound here fails (547 ms seen).
});

t.test('a clientCapabilities that is not the 2026 shape: 400 -32602, no upstream initialize', async (t) => {
  const before = (await fixture.stats()).initializeCount;
  const logsFrom = causeway.logs.length;
  const shapes: JsonObject[] = [
    { elicitation: { form: 'x' } },
    { elicitation: 'yes' },
    { sampling: { tools: true } },
    { roots: [] },
    { experimental: { x: 1 } },
    { extensions: { 'io.modelcontextprotocol/tasks': 'on' } },
    // Each distinct set opens its own upstream session: a big one would pin memory on both sides.
    { experimental: { big: { blob: 'x'.repeat(10_000) } } },
  ];
  for (const caps of shapes) {
    const call = toolCall('echo', { text: 'x' }, 'caps-1', { [META_CAPABILITIES]: caps });
    const res = await post(causeway.url, call.body, call.headers);
    assertRpcError(t, res, { status: 400, code: -32602, id: 'caps-1' });
    t.match(res.json?.error?.message, /clientCapabilities/, `${JSON.stringify(caps)}: the message says what is wrong`);
  }
  const fine = toolCall('echo', { text: 'x' }, 'caps-2', {
    [META_CAPABILITIES]: { elicitation: { form: {} }, roots: { listChanged: true }, future: 1 },
  });
  t.equal(
    (await post(causeway.url, fine.body, fine.headers)).status,
    200,
    'a well-formed one (with a member 2026 does not name) is served',
  );
  t.equal((await fixture.stats()).initializeCount, before + 1, 'only the well-formed one opened an upstream session');
  noClientFaultErrors(t, logsFrom);
});

t.test('exactly one Host, a valid host[:port]', async (t) => {
  const body = JSON.stringify(modernBody('server/discover', {}, 'h-1'));
  const head = (hosts: string[]) =>
    `POST /mcp HTTP/1.1\r\n${hosts.map((h) => `Host: ${h}\r\n`).join('')}Content-Type: ` +
    `application/json\r\nAccept: application/json, text/event-stream\r\n` +
    `MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: ` +
    `server/discover\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
  const port = causeway.port;
  t.equal(rawStatus(await rawExchange(port, head([`127.0.0.1:${port}`]))), 200, 'one valid Host is served');
  t.equal(rawStatus(await rawExchange(port, head([`[::1]:${port}`]))), 200, 'an IPv6 literal with a port is served');
  for (const hosts of [
    ['127.0.0.1', '127.0.0.1'],
    ['localhost', 'evil.example'],
    ['[::1]evil.com'],
    ['[::1'],
    ['local host'],
    ['127.0.0.1:80x'],
    ['a@b'],
  ]) {
    const raw = await rawExchange(port, head(hosts));
    t.equal(rawStatus(raw), 400, `Host ${JSON.stringify(hosts)}: 400`);
    t.match(raw, /"code":-32600/, 'a JSON-RPC error');
  }
  // No Host at all: Node's HTTP/1.1 parser refuses it before Causeway sees it.
  t.equal(rawStatus(await rawExchange(port, head([]))), 400, 'no Host: 400');
});
