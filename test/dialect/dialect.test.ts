// Legacy results and errors -> 2026-07-28, case by case, expected values from the spec.

import t from 'tap';
import {
  declares,
  discoverResult,
  requiredCapability,
  statusForUpstreamError,
  toLegacyClientCapabilities,
  translateError,
  translateResult,
} from '../../src/dialect/index.js';

const serverInfo = { name: 'legacy', version: '1.0.0' };
const SI = 'io.modelcontextprotocol/serverInfo';

t.test('errors', async (t) => {
  t.same(
    translateError(
      'resources/read',
      { code: -32002, message: 'MCP error -32002: Resource not found' },
      { uri: 'test://x' },
    ),
    {
      code: -32602,
      message: 'Resource not found: test://x',
      data: { uri: 'test://x' },
    },
    'the recoded error says it in its own words, not the old code',
  );
  t.same(
    translateError('resources/read', { code: -32602, message: 'nope' }, { uri: 'test://y' }).data,
    { uri: 'test://y' },
    'data.uri added',
  );
  t.same(
    translateError('tools/call', { code: -32042, message: 'URL elicitation required', data: { elicitations: [] } }, {}),
    {
      code: -32603,
      message: 'Upstream error: URL elicitation required',
    },
    '-32042 never leaks',
  );
  t.equal(
    translateError('tools/call', { code: -32050, message: 'MCP error -32050: odd' }, {}).message,
    'Upstream error: odd',
    'the old code is not kept in the text',
  );
  t.equal(translateError('tools/call', { code: -32099, message: 'x' }, {}).code, -32603, 'undefined reserved code');
  t.equal(
    translateError('tools/call', { code: -32021, message: 'x', data: { requiredCapabilities: {} } }, {}).code,
    -32021,
    'defined code kept',
  );
  t.equal(
    translateError('tools/call', { code: -32000, message: 'x' }, {}).code,
    -32000,
    'implementation-defined code relayed',
  );
  t.equal(statusForUpstreamError(-32601), 404);
  t.equal(statusForUpstreamError(-32021), 400);
  t.equal(statusForUpstreamError(-32602), 200);
});

t.test('results', async (t) => {
  const list = translateResult(
    'tools/list',
    {
      tools: [
        { name: 'b', inputSchema: { type: 'object' } },
        { name: 'a', inputSchema: { type: 'object' } },
        { name: 'bad', inputSchema: { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } } },
      ],
    },
    { serverInfo, cache: { ttlMs: 1000, cacheScope: 'private' } },
  );
  t.same(
    (list.tools as Array<{ name: string }>).map((x) => x.name),
    ['a', 'b'],
    'sorted, invalid x-mcp-header dropped',
  );
  t.equal(list.resultType, 'complete');
  t.equal(list.ttlMs, 1000);
  t.equal(list.cacheScope, 'private');
  t.same((list._meta as Record<string, unknown>)[SI], serverInfo);
  const call = translateResult('tools/call', { content: [], _meta: { keep: 1 } }, { serverInfo, cache: undefined });
  t.notOk('ttlMs' in call, 'no cache hints on tools/call');
  t.same(call._meta, { keep: 1, [SI]: serverInfo }, 'result _meta kept');
});

t.test('discover', async (t) => {
  const d = discoverResult(
    {
      protocolVersion: '2025-11-25',
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true },
        tasks: { list: {} },
        logging: {},
        completions: {},
      },
      serverInfo,
      instructions: 'be nice',
    },
    { ttlMs: 0, cacheScope: 'private' },
  );
  t.same(
    d.capabilities,
    { tools: { listChanged: true }, resources: { subscribe: true }, completions: {}, logging: {} },
    'tasks dropped; listChanged / subscribe kept (bridged by subscriptions/listen)',
  );
  t.same(d.supportedVersions, ['2026-07-28']);
  t.equal(d.instructions, 'be nice');
  t.equal(d.resultType, 'complete');
  t.same((d._meta as Record<string, unknown>)[SI], serverInfo);
  t.notOk('serverInfo' in d, 'serverInfo only in _meta');
});

t.test('capabilities', async (t) => {
  t.same(toLegacyClientCapabilities({ roots: { listChanged: true }, sampling: { tools: {} }, extensions: { x: {} } }), {
    roots: {},
    sampling: { tools: {} },
  });
  t.same(requiredCapability('elicitation/create', { mode: 'url' }), { elicitation: { url: {} } });
  t.same(requiredCapability('sampling/createMessage', { tools: [] }), { sampling: { tools: {} } });
  t.ok(declares({ elicitation: {} }, { elicitation: { form: {} } }), 'elicitation: {} means form');
  t.notOk(declares({ elicitation: {} }, { elicitation: { url: {} } }), 'but not url');
  t.notOk(declares({ sampling: {} }, { sampling: { tools: {} } }));
  t.notOk(declares({}, { roots: {} }));
});
