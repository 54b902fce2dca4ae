// The classifier's verdict for every envelope case of the digest: era, error reason, code and
// echoed id. Expected values are written from the spec, not recorded from Causeway.

import t from 'tap';
import { classifyPost } from '../../src/envelope/classify.js';
import { ERROR_TABLE } from '../../src/errors.js';
import { META_VERSION, MODERN_VERSION, modernBody, modernHeaders, modernMeta, type JsonObject } from '../e2e/wire.js';

// Well-formed pieces come from the e2e envelope builder; each case spoils one thing by hand.
const V = MODERN_VERSION;
const meta = modernMeta();
const h = (method: string, extra: Record<string, string> = {}) => ({ ...modernHeaders(method), ...extra });
/** A well-formed request, or one with an id no builder would write (null, 1.5). */
const req = (method: string, params: JsonObject = {}, id: unknown = 7) => ({ ...modernBody(method, params), id });

interface Case {
  name: string;
  headers: Record<string, string>;
  body: unknown;
  parseError?: boolean;
  era: 'legacy' | 'modern' | 'reject' | 'accepted';
  code?: number;
  status?: number;
  id?: unknown;
}

const cases: Case[] = [
  { name: 'valid tools/list', headers: h('tools/list'), body: req('tools/list'), era: 'modern' },
  {
    name: 'valid tools/call',
    headers: h('tools/call', { 'mcp-name': 'echo' }),
    body: req('tools/call', { name: 'echo' }),
    era: 'modern',
  },
  {
    name: 'parse error',
    headers: h('tools/list'),
    body: undefined,
    parseError: true,
    era: 'reject',
    code: -32700,
    status: 400,
    id: null,
  },
  {
    name: 'batch',
    headers: h('tools/list'),
    body: [req('tools/list')],
    era: 'reject',
    code: -32600,
    status: 400,
    id: null,
  },
  { name: 'not an object', headers: h('tools/list'), body: 42, era: 'reject', code: -32600, status: 400, id: null },
  {
    name: 'wrong jsonrpc',
    headers: h('tools/list'),
    body: { ...req('tools/list'), jsonrpc: '1.0' },
    era: 'reject',
    code: -32600,
    status: 400,
    id: 7,
  },
  {
    name: 'null id',
    headers: h('tools/list'),
    body: req('tools/list', {}, null),
    era: 'reject',
    code: -32600,
    status: 400,
    id: null,
  },
  {
    name: 'float id',
    headers: h('tools/list'),
    body: req('tools/list', {}, 1.5),
    era: 'reject',
    code: -32600,
    status: 400,
    id: null,
  },
  {
    name: 'string id echoed',
    headers: h('nope'),
    body: req('nope', {}, 'abc'),
    era: 'reject',
    code: -32601,
    status: 404,
    id: 'abc',
  },
  {
    name: 'method not a string',
    headers: h('tools/list'),
    body: { jsonrpc: '2.0', id: 3, method: 5, params: { _meta: meta } },
    era: 'reject',
    code: -32600,
    status: 400,
    id: 3,
  },
  {
    name: 'client response',
    headers: h('tools/list'),
    body: { jsonrpc: '2.0', id: 3, result: {} },
    era: 'reject',
    code: -32600,
    status: 400,
    id: 3,
  },
  {
    name: 'notification',
    headers: h('notifications/initialized'),
    body: { jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: meta } },
    era: 'reject',
    code: -32600,
    status: 400,
    id: null,
  },
  {
    name: 'notifications/cancelled is accepted and ignored',
    headers: h('notifications/cancelled'),
    body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: meta } },
    era: 'accepted',
  },
  {
    name: 'params not an object',
    headers: h('tools/list'),
    body: { jsonrpc: '2.0', id: 8, method: 'tools/list', params: [1] },
    era: 'reject',
    code: -32602,
    status: 400,
    id: 8,
  },
  {
    name: 'missing _meta',
    headers: h('tools/list'),
    body: { jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} },
    era: 'reject',
    code: -32602,
    status: 400,
    id: 9,
  },
  {
    name: 'missing clientCapabilities',
    headers: h('tools/list'),
    body: { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: { [META_VERSION]: V } } },
    era: 'reject',
    code: -32602,
    status: 400,
    id: 9,
  },
  {
    name: 'bad logLevel',
    headers: h('tools/list'),
    body: {
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/list',
      params: { _meta: { ...meta, 'io.modelcontextprotocol/logLevel': 'loud' } },
    },
    era: 'reject',
    code: -32602,
    status: 400,
    id: 9,
  },
  {
    name: 'version header missing',
    headers: { 'mcp-method': 'tools/list' },
    body: req('tools/list'),
    era: 'reject',
    code: -32020,
    status: 400,
    id: 7,
  },
  {
    name: 'version header differs',
    headers: h('tools/list', { 'mcp-protocol-version': '2025-11-25' }),
    body: req('tools/list'),
    era: 'reject',
    code: -32020,
    status: 400,
    id: 7,
  },
  {
    name: 'unsupported version',
    headers: h('tools/list', { 'mcp-protocol-version': '1900-01-01' }),
    body: { jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: { ...meta, [META_VERSION]: '1900-01-01' } } },
    era: 'reject',
    code: -32022,
    status: 400,
    id: 4,
  },
  {
    name: 'Mcp-Method missing',
    headers: { 'mcp-protocol-version': V },
    body: req('tools/list'),
    era: 'reject',
    code: -32020,
    status: 400,
    id: 7,
  },
  {
    name: 'Mcp-Method wrong case',
    headers: h('TOOLS/LIST'),
    body: req('tools/list'),
    era: 'reject',
    code: -32020,
    status: 400,
    id: 7,
  },
  { name: 'Mcp-Method padded is trimmed', headers: h('  tools/list  '), body: req('tools/list'), era: 'modern' },
  {
    name: 'Mcp-Name missing',
    headers: h('tools/call'),
    body: req('tools/call', { name: 'echo' }),
    era: 'reject',
    code: -32020,
    status: 400,
    id: 7,
  },
  {
    name: 'Mcp-Name differs',
    headers: h('tools/call', { 'mcp-name': 'other' }),
    body: req('tools/call', { name: 'echo' }),
    era: 'reject',
    code: -32020,
    status: 400,
    id: 7,
  },
  {
    name: 'Mcp-Name base64',
    headers: h('tools/call', { 'mcp-name': '=?base64?ZWNobw==?=' }),
    body: req('tools/call', { name: 'echo' }),
    era: 'modern',
  },
  {
    name: 'Mcp-Name invalid base64',
    headers: h('tools/call', { 'mcp-name': '=?base64?***?=' }),
    body: req('tools/call', { name: 'echo' }),
    era: 'reject',
    code: -32020,
    status: 400,
    id: 7,
  },
  {
    name: 'Mcp-Name base64 of bad UTF-8',
    headers: h('tools/call', { 'mcp-name': '=?base64?/w==?=' }),
    body: req('tools/call', { name: 'echo' }),
    era: 'reject',
    code: -32020,
    status: 400,
    id: 7,
  },
  {
    name: 'Mcp-Name control character',
    headers: h('tools/call', { 'mcp-name': 'ec\u0001ho' }),
    body: req('tools/call', { name: 'ec\u0001ho' }),
    era: 'reject',
    code: -32020,
    status: 400,
    id: 7,
  },
  {
    name: 'resources/read uri in Mcp-Name',
    headers: h('resources/read', { 'mcp-name': 'test://static-text' }),
    body: req('resources/read', { uri: 'test://static-text' }),
    era: 'modern',
  },
  {
    name: 'tools/call without name',
    headers: h('tools/call'),
    body: req('tools/call', {}),
    era: 'reject',
    code: -32602,
    status: 400,
    id: 7,
  },
  { name: 'removed ping', headers: h('ping'), body: req('ping'), era: 'reject', code: -32601, status: 404, id: 7 },
  {
    name: 'removed logging/setLevel',
    headers: h('logging/setLevel'),
    body: req('logging/setLevel', { level: 'info' }),
    era: 'reject',
    code: -32601,
    status: 404,
    id: 7,
  },
  {
    name: 'removed resources/subscribe',
    headers: h('resources/subscribe'),
    body: req('resources/subscribe', { uri: 'x' }),
    era: 'reject',
    code: -32601,
    status: 404,
    id: 7,
  },
  {
    name: 'unknown method',
    headers: h('foo/bar'),
    body: req('foo/bar'),
    era: 'reject',
    code: -32601,
    status: 404,
    id: 7,
  },
  {
    name: 'initialize with a modern envelope is a removed method',
    headers: h('initialize'),
    body: req('initialize'),
    era: 'reject',
    code: -32601,
    status: 404,
    id: 7,
  },
  {
    name: 'legacy initialize',
    headers: {},
    body: {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
    },
    era: 'legacy',
  },
  {
    name: 'legacy session',
    headers: { 'mcp-session-id': 'abc', 'mcp-protocol-version': '2025-11-25' },
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    era: 'legacy',
  },
  {
    name: 'modern envelope with a stray Mcp-Session-Id is modern',
    headers: h('tools/list', { 'mcp-session-id': 'abc' }),
    body: req('tools/list'),
    era: 'modern',
  },
  {
    name: 'legacy session garbage still forwarded',
    headers: { 'mcp-session-id': 'abc' },
    body: undefined,
    parseError: true,
    era: 'legacy',
  },
  {
    name: 'legacy version header, no _meta',
    headers: { 'mcp-protocol-version': '2025-06-18' },
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    era: 'legacy',
  },
  {
    name: 'modern version header, no _meta',
    headers: h('tools/list'),
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    era: 'reject',
    code: -32602,
    status: 400,
    id: 1,
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const v = classifyPost({ headers: c.headers, body: c.body, parseError: c.parseError ?? false });
    t.equal(v.era, c.era);
    if (v.era === 'reject') {
      const row = ERROR_TABLE[v.rejection.reason];
      t.equal(row.code, c.code, 'JSON-RPC code');
      t.equal(row.status, c.status, 'HTTP status');
      t.equal(v.rejection.id, c.id, 'echoed id');
    }
  });
}

t.test('-32022 names the supported and requested versions', async (t) => {
  const v = classifyPost({
    headers: h('tools/list', { 'mcp-protocol-version': '2099-01-01' }),
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { ...meta, [META_VERSION]: '2099-01-01' } } },
    parseError: false,
  });
  t.equal(v.era, 'reject');
  if (v.era === 'reject') t.same(v.rejection.data, { supported: ['2026-07-28'], requested: '2099-01-01' });
});
