import t from 'tap';
import {
  checkParamHeaders,
  decodeHeaderValue,
  encodeHeaderValue,
  mayNeedParamHeaders,
  paramHeaders,
  readParamHeaders,
} from '../../src/envelope/headers.js';
import type { JsonObject } from '../../src/jsonrpc.js';
import { checkOrigin, originPolicy } from '../../src/envelope/origin.js';

t.test('header value decoding', async (t) => {
  t.equal(decodeHeaderValue('plain'), 'plain');
  t.equal(decodeHeaderValue('  trimmed  '), 'trimmed');
  t.equal(decodeHeaderValue(`=?base64?${Buffer.from('héllo wörld').toString('base64')}?=`), 'héllo wörld');
  t.equal(decodeHeaderValue('=?base64?aGk=?='), 'hi');
  t.equal(decodeHeaderValue('=?BASE64?aGk=?='), '=?BASE64?aGk=?=', 'markers are case-sensitive: no decoding');
  t.equal(decodeHeaderValue('=?base64?a?='), undefined, 'bad padding');
  t.equal(decodeHeaderValue('caf\u00e9'), undefined, 'raw non-ASCII refused');
  t.equal(decodeHeaderValue('a\tb'), undefined, 'control characters refused');
  t.equal(decodeHeaderValue(''), '', 'empty is empty');
  t.equal(decodeHeaderValue('a b'), 'a b', 'inner spaces kept');
  t.equal(decodeHeaderValue('=?base64?aGk='), '=?base64?aGk=', 'no closing marker: a plain value');
  t.equal(decodeHeaderValue('a\u007fb'), undefined, 'DEL refused');
});

t.test('header value encoding: as is only when decoding gives it back', async (t) => {
  const b64 = (v: string) => `=?base64?${Buffer.from(v, 'utf8').toString('base64')}?=`;
  t.equal(encodeHeaderValue('tools/call'), 'tools/call');
  t.equal(encodeHeaderValue('a b'), 'a b', 'inner spaces as is');
  for (const v of ['', ' lead', 'trail ', 'caf\u00e9', 'a\tb', 'a\u007fb', '=?base64?aGk=?=']) {
    t.equal(encodeHeaderValue(v), b64(v), `encoded: ${JSON.stringify(v)}`);
  }
  for (const v of ['tools/call', 'a b', '', ' lead', 'trail ', 'caf\u00e9', '日本', '=?base64?aGk=?=', '=?base64?x']) {
    t.equal(decodeHeaderValue(encodeHeaderValue(v)), v, `round trip: ${JSON.stringify(v)}`);
  }
});

const schema = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    count: { type: 'integer', 'x-mcp-header': 'Count' },
    flag: { type: 'boolean', 'x-mcp-header': 'Flag' },
    nested: { type: 'object', properties: { deep: { type: 'string', 'x-mcp-header': 'Deep' } } },
    free: { type: 'string' },
  },
};

t.test('x-mcp-header annotations', async (t) => {
  const ph = paramHeaders(schema)!;
  t.same(ph.map((p) => p.header).sort(), ['Count', 'Deep', 'Flag', 'Region']);
  t.equal(
    paramHeaders({ type: 'object', properties: { x: { type: 'number', 'x-mcp-header': 'X' } } }),
    undefined,
    'number refused',
  );
  t.equal(
    paramHeaders({
      type: 'object',
      properties: { a: { type: 'string', 'x-mcp-header': 'A' }, b: { type: 'string', 'x-mcp-header': 'a' } },
    }),
    undefined,
    'case-insensitive duplicate refused',
  );
  t.equal(
    paramHeaders({ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'bad name' } } }),
    undefined,
    'non-token refused',
  );
});

t.test('why annotations give no headers: the property and the fault, for causeway doctor', async (t) => {
  const one = (prop: JsonObject) => readParamHeaders({ type: 'object', properties: { x: prop } });
  t.same(readParamHeaders(schema), { headers: paramHeaders(schema) }, 'valid ones read as paramHeaders reads them');
  t.same(one({ type: 'number', 'x-mcp-header': 'X' }), {
    problem: 'x: x-mcp-header on a "number" property (string, integer or boolean only)',
  });
  t.same(one({ type: 'string', 'x-mcp-header': 'bad name' }), {
    problem: 'x: x-mcp-header is not a header name token',
  });
  const twice = { a: { type: 'string', 'x-mcp-header': 'A' }, b: { type: 'string', 'x-mcp-header': 'a' } };
  t.same(readParamHeaders({ type: 'object', properties: twice }), { problem: 'b: x-mcp-header a is used twice' });
});

t.test('Mcp-Param-* checks', async (t) => {
  const ph = paramHeaders(schema)!;
  const args = { region: 'eu-west', count: 42, flag: true, nested: { deep: 'ü' } };
  const good = {
    'mcp-param-region': 'eu-west',
    'mcp-param-count': '42.0',
    'mcp-param-flag': 'true',
    'mcp-param-deep': `=?base64?${Buffer.from('ü').toString('base64')}?=`,
  };
  t.ok(checkParamHeaders(good, ph, args).ok);
  t.notOk(checkParamHeaders({ ...good, 'mcp-param-region': 'us-east' }, ph, args).ok, 'mismatch');
  const { ['mcp-param-count']: _omit, ...missing } = good;
  t.notOk(checkParamHeaders(missing, ph, args).ok, 'missing header while the body has the value');
  t.ok(checkParamHeaders({}, ph, { free: 'x' }).ok, 'absent values need no header');
  t.ok(checkParamHeaders({}, ph, { region: null } as never).ok, 'null values need no header');
});

t.test('only a call with a Mcp-Param-* header or an argument value can be refused by annotations', async (t) => {
  t.notOk(mayNeedParamHeaders({ 'mcp-name': 'echo' }, undefined), 'no arguments');
  t.notOk(mayNeedParamHeaders({}, { region: null } as never), 'null values need no header');
  t.ok(mayNeedParamHeaders({}, { text: 'a' }), 'a value an annotation could name');
  t.ok(mayNeedParamHeaders({}, { nested: { region: 'x' } }), 'nested objects hold values too');
  t.ok(mayNeedParamHeaders({ 'mcp-param-region': 'x' }, undefined), 'a header to compare');
});

t.test('Host and Origin', async (t) => {
  const loop = originPolicy('127.0.0.1', [], []);
  t.ok(checkOrigin(loop, '127.0.0.1:8080', undefined).ok);
  t.ok(checkOrigin(loop, 'localhost:8080', 'http://localhost:3000').ok);
  t.same(checkOrigin(loop, 'evil.example:8080', undefined), { ok: false, reason: 'forbidden_host' });
  t.same(checkOrigin(loop, 'localhost:8080', 'http://evil.example'), { ok: false, reason: 'forbidden_origin' });
  t.same(checkOrigin(loop, 'localhost:8080', 'not a url'), { ok: false, reason: 'forbidden_origin' });
  const open = originPolicy('0.0.0.0', [], []);
  t.ok(checkOrigin(open, 'mcp.internal', undefined).ok, 'any host when bound widely and no list');
  t.ok(checkOrigin(open, 'mcp.internal', 'https://mcp.internal').ok, 'same-host origin');
  t.notOk(checkOrigin(open, 'mcp.internal', 'https://evil.example').ok, 'foreign origin');
  const listed = originPolicy('0.0.0.0', ['mcp.internal'], ['https://app.example']);
  t.ok(checkOrigin(listed, 'mcp.internal:443', 'https://app.example').ok);
  t.notOk(checkOrigin(listed, 'other.internal', undefined).ok);
});
