// The request fuzzer's case generator, shared by test/ingress/fuzz.test.ts (a few thousand cases)
// and bench/fuzz.ts (`npm run fuzz`, 100,000). Case `index` of seed `seed` is always the same
// request: each case has its own PRNG (mulberry32 of a mix of seed and index), so one case can be
// replayed without generating the ones before it. Pure: it builds bytes, it sends nothing.
//
// Both eras: well-formed modern requests (the fixture's tools, lists, discover, reads, prompts,
// with the _meta of test/e2e/wire.ts), then mutated: fields dropped, duplicated and retyped,
// _meta and clientCapabilities in wrong shapes, deep nesting and very wide objects (built as text:
// such values cannot go through JSON.stringify), bytes that are not UTF-8, truncated JSON,
// batches, non-JSON, wrong Content-Type / Accept, mirrored headers that disagree with the body,
// bad MCP-Protocol-Version, odd Host / Origin; and legacy traffic (initialize with odd params,
// garbage Mcp-Session-Id on POST, GET and DELETE, mutated requests inside a real session).
// What no HTTP client will send (duplicate Host, bad bytes in the head, broken framing) goes as
// raw bytes.

import {
  META_CAPABILITIES,
  META_CLIENT_INFO,
  META_VERSION,
  MODERN_VERSION,
  modernHeaders,
  modernMeta,
  type Json,
  type JsonObject,
} from '../e2e/wire.js';

export const LEGACY_VERSION = '2025-11-25';
/** The fuzzer keeps every body under this (the default limits.maxBodyBytes is 1 MiB). */
export const MAX_FUZZ_BODY = 1_000_000;
/** Bodies sent with a mutated head stay this small, so an early refusal never races a big upload. */
const SMALL_BODY = 64 * 1024;

export type Rng = () => number;

/** mulberry32: a 32-bit state PRNG, uniform in [0, 1). */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The PRNG of one case: independent of every other case of the seed. */
export function caseRng(seed: number, index: number): Rng {
  let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return mulberry32((h ^ (h >>> 16)) >>> 0);
}

class Pick {
  constructor(readonly r: Rng) {}
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.r() * (hi - lo + 1));
  }
  /** Integer in [lo, hi], log-uniform: small and huge sizes are both common. */
  logInt(lo: number, hi: number): number {
    return Math.min(hi, Math.floor(Math.exp(Math.log(lo) + this.r() * (Math.log(hi + 1) - Math.log(lo)))));
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  one<T>(items: readonly T[]): T {
    return items[Math.floor(this.r() * items.length)]!;
  }
  weighted<T>(items: ReadonlyArray<readonly [number, T]>): T {
    const total = items.reduce((s, [w]) => s + w, 0);
    let x = this.r() * total;
    for (const [w, v] of items) {
      x -= w;
      if (x < 0) return v;
    }
    return items[items.length - 1]![1];
  }
  word(n: number, alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'): string {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(this.r() * alphabet.length)];
    return s;
  }
}

export interface FuzzContext {
  /** Causeway's data port (for Host headers). */
  port: number;
  /** A live legacy session opened through Causeway, for in-session cases; omitted: those are skipped. */
  sessionId?: string;
}

export interface ExpectedStatus {
  status: number;
  /** JSON-RPC code the error body must carry when there is one. */
  code?: number;
  why: string;
}

export interface FuzzCase {
  seed: number;
  index: number;
  /** Counted in the summary, e.g. `modern/structure`. */
  family: string;
  /** The mutations applied, in order. */
  labels: string[];
  transport: 'http' | 'raw';
  method: string;
  path: string;
  /** HTTP transport: exactly these headers (node:http adds none but content-length). Raw: informative. */
  headers: Record<string, string>;
  /** The body (raw transport: the one inside the framing, which may cut or mangle it). */
  body: Buffer | undefined;
  /** HTTP transport: send the body with Transfer-Encoding: chunked. */
  chunked: boolean;
  /** Raw transport: the bytes written. */
  raw: Buffer | undefined;
  /** Set where the spec pins the answer's status for this case. */
  expect: ExpectedStatus | undefined;
  /** The Host is malformed, duplicated or missing: refused before the body is read. */
  hostFault: boolean;
  /** Expected to reach the legacy passthrough (its transport-level errors are the upstream's). */
  legacy: boolean;
  /** The value of x-request-id: Causeway logs it as reqId. */
  requestId: string;
}

// ---------------------------------------------------------------------------------------------
// Drafts: a JSON tree with holes (raw JSON text spliced in after JSON.stringify), a head, labels.

interface Draft {
  family: string;
  labels: string[];
  method: string;
  path: string;
  headers: Record<string, string>;
  /** undefined: no body. */
  body: Json | undefined;
  holes: Map<string, string>;
  /** Once set, the body as bytes (byte-level mutations and non-JSON bodies). */
  bytes: Buffer | undefined;
  chunked: boolean;
  /** A deep, wide or long value is in the body: no second one. */
  big: boolean;
  expect: ExpectedStatus | undefined;
  hostFault: boolean;
  /** The mirrored headers were computed from the body as it was first built. */
  mirror: { method: string; name?: string } | undefined;
}

let holeSeq = 0;
function hole(d: Draft, raw: string): string {
  const token = `@@fuzz-hole-${++holeSeq}@@`;
  d.holes.set(token, raw);
  return token;
}

function serialize(d: Draft): Buffer | undefined {
  if (d.bytes) return d.bytes;
  if (d.body === undefined) return undefined;
  let text = JSON.stringify(d.body);
  for (const [token, raw] of d.holes) text = text.split(JSON.stringify(token)).join(raw);
  return Buffer.from(text, 'utf8');
}

const isObj = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function params(d: Draft): JsonObject | undefined {
  return isObj(d.body) && isObj(d.body.params) ? d.body.params : undefined;
}
function meta(d: Draft): JsonObject | undefined {
  const p = params(d);
  return p && isObj(p._meta) ? p._meta : undefined;
}

function hostOf(ctx: FuzzContext): string {
  return `127.0.0.1:${ctx.port}`;
}

/** Header value encoding of the spec: plain visible ASCII as is, anything else as =?base64?…?=. */
export function encodeHeaderValue(v: string): string {
  const plain = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(v) && !/^=\?base64\?.*\?=$/.test(v);
  return plain ? v : `=?base64?${Buffer.from(v, 'utf8').toString('base64')}?=`;
}

// ---------------------------------------------------------------------------------------------
// Well-formed modern requests.

interface ToolPick {
  name: string;
  args: JsonObject;
  meta?: JsonObject;
  /** Mcp-Param-* headers the arguments call for. */
  params?: Record<string, string>;
}

function toolPick(p: Pick): ToolPick {
  return p.weighted<() => ToolPick>([
    [
      8,
      () => ({
        name: 'echo',
        args: { text: p.one(['hi', p.word(p.int(0, 40)), 'ünïcödé ☃', 'a"b\\c', '\u0000\u001f', '']) },
      }),
    ],
    [3, () => ({ name: 'test_simple_text', args: {} })],
    [2, () => ({ name: 'test_image_content', args: {} })],
    [1, () => ({ name: 'test_audio_content', args: {} })],
    [1, () => ({ name: 'test_embedded_resource', args: {} })],
    [1, () => ({ name: 'test_multiple_content_types', args: {} })],
    [2, () => ({ name: 'test_error_handling', args: {} })],
    [
      2,
      () => ({
        name: 'test_tool_with_progress',
        args: {},
        meta: { progressToken: p.chance(0.5) ? p.word(8) : p.int(0, 1e6) },
      }),
    ],
    [
      1,
      () => ({
        name: 'test_tool_with_logging',
        args: {},
        meta: p.chance(0.5) ? { 'io.modelcontextprotocol/logLevel': 'info' } : {},
      }),
    ],
    [2, () => ({ name: 'counter', args: {} })],
    [2, () => ({ name: 'whoami', args: {} })],
    [2, () => ({ name: 'no_such_tool', args: {} })],
    [
      4,
      () => {
        const region = p.one(['us-west', 'eu central', 'ünï', ' padded ', '=?base64?x?=', 'a'.repeat(200)]);
        const priority = p.int(-5, 99);
        const verbose = p.chance(0.5);
        return {
          name: 'test_x_mcp_header',
          args: { region, priority, verbose, query: 'q' },
          params: {
            'mcp-param-region': encodeHeaderValue(region),
            'mcp-param-priority': String(priority),
            'mcp-param-verbose': String(verbose),
          },
        };
      },
    ],
    // Rare: these ask the client (sampling) or close the stream mid-call.
    [0.4, () => ({ name: 'test_missing_capability', args: {} })],
    [0.3, () => ({ name: 'test_reconnection', args: {} })],
  ])();
}

function baseDraft(family: string, ctx: FuzzContext, method: string, path = '/mcp'): Draft {
  return {
    family,
    labels: [],
    method,
    path,
    headers: { host: hostOf(ctx) },
    body: undefined,
    holes: new Map(),
    bytes: undefined,
    chunked: false,
    big: false,
    expect: undefined,
    hostFault: false,
    mirror: undefined,
  };
}

function modernId(p: Pick): string | number {
  return p.chance(0.5) ? p.int(0, 100_000) : `req-${p.word(6)}`;
}

function modernRequest(p: Pick, ctx: FuzzContext, family: string): Draft {
  const d = baseDraft(family, ctx, 'POST');
  const id = modernId(p);
  let ps: JsonObject = {};
  let name: string | undefined;
  let extraMeta: JsonObject = {};
  let paramHeaders: Record<string, string> = {};
  const which = p.weighted<string>([
    [40, 'tools/call'],
    [10, 'tools/list'],
    [8, 'server/discover'],
    [8, 'resources/read'],
    [8, 'prompts/get'],
    [5, 'prompts/list'],
    [5, 'resources/list'],
    [3, 'resources/templates/list'],
    [3, 'completion/complete'],
  ]);
  const rpcMethod = which;
  switch (which) {
    case 'tools/call': {
      const tp = toolPick(p);
      name = tp.name;
      ps = { name: tp.name, arguments: tp.args };
      extraMeta = tp.meta ?? {};
      paramHeaders = tp.params ?? {};
      break;
    }
    case 'tools/list':
    case 'prompts/list':
    case 'resources/list':
    case 'resources/templates/list':
      if (p.chance(0.15)) ps = { cursor: p.one(['', 'garbage', 'MA==', p.word(30)]) };
      break;
    case 'resources/read':
      name = p.one([
        'test://static-text',
        'test://static-binary',
        'test://watched-resource',
        'test://template/7/data',
        'test://nope',
      ]);
      ps = { uri: name };
      break;
    case 'prompts/get':
      name = p.one([
        'test_simple_prompt',
        'test_prompt_with_arguments',
        'test_prompt_with_image',
        'test_prompt_with_embedded_resource',
        'no_such_prompt',
      ]);
      ps = { name };
      if (name === 'test_prompt_with_arguments' && p.chance(0.8)) ps.arguments = { arg1: 'a', arg2: p.word(3) };
      if (name === 'test_prompt_with_embedded_resource') ps.arguments = { resourceUri: 'test://static-text' };
      break;
    case 'completion/complete':
      ps = {
        ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
        argument: { name: 'arg1', value: p.word(2) },
      };
      break;
    default:
      break;
  }
  d.body = { jsonrpc: '2.0', id, method: rpcMethod, params: { ...ps, _meta: modernMeta({ ...extraMeta }) } };
  const h = modernHeaders(rpcMethod, name === undefined ? undefined : encodeHeaderValue(name));
  Object.assign(d.headers, h, paramHeaders);
  d.mirror = name === undefined ? { method: rpcMethod } : { method: rpcMethod, name };
  return d;
}

/** After a body mutation, a client that mirrors its own body would send these headers. */
function remirror(d: Draft): void {
  if (!isObj(d.body)) return;
  const m = d.body.method;
  if (typeof m === 'string') d.headers['mcp-method'] = m;
  const ps = params(d);
  const n = ps?.name ?? ps?.uri;
  if (typeof n === 'string') d.headers['mcp-name'] = encodeHeaderValue(n);
  else delete d.headers['mcp-name'];
  d.labels.push('remirror');
}

// ---------------------------------------------------------------------------------------------
// Value pools.

type Valuer = (p: Pick, d: Draft) => { v: Json; label: string };
const raw =
  (text: string, label = text): Valuer =>
  (_p, d) => ({ v: hole(d, text), label });
const val =
  (v: Json, label = JSON.stringify(v)): Valuer =>
  () => ({ v, label });

const ID_VALUES: Valuer[] = [
  val({ a: 1 }),
  val([]),
  val([1]),
  val(true),
  val(false),
  val(null),
  val(0),
  val(-1),
  val(1.5),
  val(''),
  val('☃\u0000\ud800', 'unicode+nul+lone-surrogate'),
  val('a"b\\c\n'),
  raw('9007199254740993'),
  raw('123456789012345678901234567890'),
  raw('1e21'),
  raw('1E400'),
  raw('-0'),
  raw('1.0'),
  (p) => {
    const n = p.logInt(1_000, 200_000);
    return { v: 'i'.repeat(n), label: `string(${n})` };
  },
];

const METHOD_VALUES: Valuer[] = [
  val(42),
  val(null),
  val({}),
  val([]),
  val(true),
  val(''),
  val('TOOLS/LIST'),
  val('tools/frobnicate'),
  val('ping'),
  val('initialize'),
  val('logging/setLevel'),
  val('resources/subscribe'),
  val('notifications/initialized'),
  val('notifications/cancelled'),
  val('tools/list\u0000', 'tools/list+nul'),
  val(' tools/list'),
  val('__proto__'),
  val('constructor'),
  val('toString'),
  val('hasOwnProperty'),
  val('tools/list'),
  val('tools/call'),
  val('server/discover'),
  (p) => {
    const n = p.logInt(100, 20_000);
    return { v: 'x'.repeat(n), label: `string(${n})` };
  },
];

const VERSION_VALUES: Valuer[] = [
  val(20260728),
  val(null),
  val({}),
  val([MODERN_VERSION]),
  val(LEGACY_VERSION),
  val('1900-01-01'),
  val(''),
  val(`${MODERN_VERSION} `),
  val(`${MODERN_VERSION}\u0000`, 'version+nul'),
  val('2026-07-28T00:00:00Z'),
];

export const CAPABILITY_SHAPES: Json[] = [
  { elicitation: { form: 'x' } },
  'x',
  [],
  null,
  5,
  true,
  { sampling: 'yes' },
  { sampling: [] },
  { sampling: null },
  { sampling: { context: 5, tools: 'x' } },
  { roots: [] },
  { roots: { listChanged: 'x' } },
  { elicitation: 'x' },
  { elicitation: [] },
  { elicitation: { form: {}, url: 7 } },
  { elicitation: { url: {} } },
  { elicitation: { form: null } },
  { extensions: 'x' },
  { extensions: [] },
  { extensions: { a: 1 } },
  { extensions: { 'io.modelcontextprotocol/tasks': 1 } },
  { experimental: 3 },
  { experimental: { a: null } },
  { tasks: {} },
  { unknown: 1 },
  { sampling: {}, elicitation: {}, roots: {} },
  { elicitation: { form: {}, url: {} } },
];

const CLIENT_INFO_VALUES: Json[] = [
  'x',
  null,
  5,
  {},
  { name: 5 },
  { name: 'a', version: [] },
  { name: 'a', version: '1', icons: 'x' },
];

// ---------------------------------------------------------------------------------------------
// Mutations of the JSON tree.

type Mutation = (p: Pick, d: Draft) => void;

function setTop(d: Draft, key: string, v: Json | undefined, label: string): void {
  if (!isObj(d.body)) return;
  if (v === undefined) delete d.body[key];
  else d.body[key] = v;
  d.labels.push(label);
}

const mutateId: Mutation = (p, d) => {
  if (p.chance(0.12)) return setTop(d, 'id', undefined, 'id:drop');
  const { v, label } = p.one(ID_VALUES)(p, d);
  setTop(d, 'id', v, `id:${label.slice(0, 40)}`);
};

const mutateMethod: Mutation = (p, d) => {
  if (p.chance(0.1)) return setTop(d, 'method', undefined, 'method:drop');
  const { v, label } = p.one(METHOD_VALUES)(p, d);
  setTop(d, 'method', v, `method:${label.slice(0, 40)}`);
};

const mutateJsonrpc: Mutation = (p, d) => {
  const v = p.one<Json | undefined>([undefined, '1.0', 2, 2.0, null, '2.0 ', ['2.0'], '']);
  setTop(d, 'jsonrpc', v, `jsonrpc:${v === undefined ? 'drop' : JSON.stringify(v)}`);
};

const mutateParams: Mutation = (p, d) => {
  const ps = params(d);
  const v = p.one<Json | undefined>([undefined, [], [ps?._meta ?? null], 'x', 1, null, true, {}, { _meta: null }]);
  setTop(d, 'params', v, `params:${v === undefined ? 'drop' : JSON.stringify(v).slice(0, 40)}`);
};

const mutateMeta: Mutation = (p, d) => {
  const ps = params(d);
  if (!ps) return mutateParams(p, d);
  const m = meta(d);
  const op = p.int(0, 9);
  if (op === 0 || !m) {
    const v = p.one<Json | undefined>([undefined, null, [], 'x', 1, {}]);
    if (v === undefined) delete ps._meta;
    else ps._meta = v;
    d.labels.push(`meta:${v === undefined ? 'drop' : JSON.stringify(v)}`);
    return;
  }
  switch (op) {
    case 1: {
      const key = p.one([META_VERSION, META_CAPABILITIES, META_CLIENT_INFO]);
      delete m[key];
      d.labels.push(`meta:drop:${key.split('/')[1]}`);
      return;
    }
    case 2:
    case 3: {
      const { v, label } = p.one(VERSION_VALUES)(p, d);
      m[META_VERSION] = v;
      d.labels.push(`meta:version=${label}`);
      return;
    }
    case 4:
    case 5:
    case 6: {
      const v = p.one(CAPABILITY_SHAPES);
      m[META_CAPABILITIES] = v;
      d.labels.push(`caps:${JSON.stringify(v)}`);
      return;
    }
    case 7: {
      const v = p.one(CLIENT_INFO_VALUES);
      m[META_CLIENT_INFO] = v;
      d.labels.push(`meta:clientInfo=${JSON.stringify(v)}`);
      return;
    }
    case 8: {
      const [k, v] = p.one<[string, Json]>([
        ['io.modelcontextprotocol/logLevel', 'loud'],
        ['io.modelcontextprotocol/logLevel', 5],
        ['io.modelcontextprotocol/logLevel', null],
        ['progressToken', {}],
        ['progressToken', true],
        ['progressToken', null],
        ['progressToken', 1.5],
        ['io.modelcontextprotocol/unknown', 1],
        ['dev.mcp/x', {}],
        ['traceparent', 5],
        ['__proto__', { polluted: true }],
        ['constructor', { prototype: { polluted: true } }],
      ]);
      m[k] = v;
      d.labels.push(`meta:${k}=${JSON.stringify(v)}`);
      return;
    }
    default: {
      ps._meta = { [META_VERSION]: m[META_VERSION] ?? MODERN_VERSION, [META_CAPABILITIES]: p.one(CAPABILITY_SHAPES) };
      d.labels.push(`caps(no clientInfo):${JSON.stringify(ps._meta[META_CAPABILITIES])}`);
    }
  }
};

const mutateName: Mutation = (p, d) => {
  const ps = params(d);
  if (!ps) return mutateParams(p, d);
  const key = 'uri' in ps ? 'uri' : 'name';
  const v = p.one<Json | undefined>([
    undefined,
    42,
    null,
    {},
    [],
    '',
    'no_such_tool',
    'ECHO',
    'echo ',
    '../echo',
    '__proto__',
    'constructor',
    'ëcho',
    'test://../../etc/passwd',
    'x'.repeat(p.logInt(100, 50_000)),
  ]);
  if (v === undefined) delete ps[key];
  else ps[key] = v;
  d.labels.push(`${key}:${v === undefined ? 'drop' : JSON.stringify(v).slice(0, 40)}`);
};

const mutateArgs: Mutation = (p, d) => {
  const ps = params(d);
  if (!ps) return mutateParams(p, d);
  const args = isObj(ps.arguments) ? ps.arguments : {};
  const op = p.int(0, 3);
  if (op === 0) {
    const v = p.one<Json | undefined>([undefined, [], 'x', 5, null, true]);
    if (v === undefined) delete ps.arguments;
    else ps.arguments = v;
    d.labels.push(`arguments:${v === undefined ? 'drop' : JSON.stringify(v)}`);
    return;
  }
  if (op === 1) {
    const [k, v] = p.one<[string, Json]>([
      ['text', 5],
      ['text', null],
      ['text', {}],
      ['region', 5],
      ['region', null],
      ['priority', 'high'],
      ['priority', 1.5],
      ['priority', 1e300],
      ['verbose', 'yes'],
      ['__proto__', { polluted: true }],
      ['extra', [1, 2, 3]],
    ]);
    args[k] = v;
    ps.arguments = args;
    d.labels.push(`arguments.${k}=${JSON.stringify(v)}`);
    return;
  }
  if (op === 2 && !d.big) {
    const n = p.logInt(1_000, 900_000);
    args.text = 'x'.repeat(n);
    ps.arguments = args;
    d.big = true;
    d.labels.push(`arguments.text=string(${n})`);
    return;
  }
  args[p.word(4)] = p.word(4);
  ps.arguments = args;
  d.labels.push('arguments:extra-key');
};

const mutateExtra: Mutation = (p, d) => {
  if (!isObj(d.body)) return;
  const [where, k, v] = p.one<[string, string, Json]>([
    ['top', 'result', {}],
    ['top', 'error', { code: 1, message: 'x' }],
    ['top', 'foo', 1],
    ['top', '__proto__', { jsonrpc: '1.0' }],
    ['params', 'cursor', 5],
    ['params', 'cursor', 'garbage'],
    ['params', 'inputResponses', 'x'],
    ['params', 'inputResponses', { a: { action: 'accept' } }],
    ['params', 'requestState', 'not-a-state'],
    ['params', 'requestState', 5],
    ['params', 'task', { ttl: 'x' }],
  ]);
  if (where === 'top') d.body[k] = v;
  else {
    const ps = params(d);
    if (!ps) return;
    ps[k] = v;
  }
  d.labels.push(`extra:${where}.${k}=${JSON.stringify(v).slice(0, 30)}`);
};

/** Where a deep or wide value goes. */
type Target = 'arguments' | 'meta' | 'caps' | 'caps.experimental' | 'caps.elicitation' | 'id' | 'params' | 'name';
const TARGETS: readonly Target[] = [
  'arguments',
  'meta',
  'caps',
  'caps.experimental',
  'caps.elicitation',
  'id',
  'params',
  'name',
];

function place(p: Pick, d: Draft, target: Target, token: string): boolean {
  if (!isObj(d.body)) return false;
  const ps = params(d);
  const m = meta(d);
  switch (target) {
    case 'arguments': {
      if (!ps) return false;
      const args = isObj(ps.arguments) ? ps.arguments : {};
      if (p.chance(0.3)) ps.arguments = token;
      else {
        args[p.one(['text', 'deep', 'region'])] = token;
        ps.arguments = args;
      }
      return true;
    }
    case 'meta':
      if (!m) return false;
      m[p.one(['x-deep', 'progressToken', META_CLIENT_INFO])] = token;
      return true;
    case 'caps':
      if (!m) return false;
      m[META_CAPABILITIES] = token;
      return true;
    case 'caps.experimental':
    case 'caps.elicitation':
      if (!m) return false;
      m[META_CAPABILITIES] = { [target.split('.')[1]!]: token };
      return true;
    case 'id':
      d.body.id = token;
      return true;
    case 'params':
      if (!ps) return false;
      ps.deep = token;
      return true;
    case 'name':
      if (!ps) return false;
      ps['uri' in ps ? 'uri' : 'name'] = token;
      return true;
  }
}

function deepText(shape: '[' | '{', depth: number): string {
  return shape === '[' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

const mutateDeep: Mutation = (p, d) => {
  if (d.big) return;
  const shape = p.one(['[', '{'] as const);
  const depth = p.chance(0.15) ? p.int(60, 999) : p.logInt(1_000, 100_000);
  const target = p.one(TARGETS);
  if (!place(p, d, target, hole(d, deepText(shape, depth)))) return;
  d.big = true;
  d.labels.push(`deep:${target}:${shape}x${depth}`);
};

const mutateWide: Mutation = (p, d) => {
  if (d.big) return;
  const kind = p.one(['keys', 'dup-keys', 'array', 'objects-array', 'long-keys'] as const);
  let text: string;
  let n: number;
  switch (kind) {
    case 'keys':
      n = p.logInt(1_000, 80_000);
      text = `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`;
      break;
    case 'dup-keys':
      n = p.logInt(1_000, 120_000);
      text = `{${'"a":0,'.repeat(n)}"a":1}`;
      break;
    case 'array':
      n = p.logInt(1_000, 450_000);
      text = `[${'0,'.repeat(n)}0]`;
      break;
    case 'objects-array':
      n = p.logInt(1_000, 200_000);
      text = `[${'{},'.repeat(n)}{}]`;
      break;
    case 'long-keys':
      n = p.logInt(10, 800);
      text = `{${Array.from({ length: n }, (_, i) => `"${String(i).padStart(1000, 'k')}":${i}`).join(',')}}`;
      break;
  }
  if (text.length > MAX_FUZZ_BODY - 2_000) return;
  const target = p.one(TARGETS);
  if (!place(p, d, target, hole(d, text))) return;
  d.big = true;
  d.labels.push(`wide:${target}:${kind}x${n}`);
};

const STRUCTURAL: ReadonlyArray<readonly [number, Mutation]> = [
  [5, mutateId],
  [3, mutateMethod],
  [2, mutateJsonrpc],
  [2, mutateParams],
  [6, mutateMeta],
  [3, mutateName],
  [3, mutateArgs],
  [2, mutateExtra],
];

// ---------------------------------------------------------------------------------------------
// Byte-level mutations (after serialization).

const BAD_UTF8: ReadonlyArray<readonly [string, number[]]> = [
  ['ff', [0xff]],
  ['c3-28', [0xc3, 0x28]],
  ['lone-continuation', [0x80]],
  ['surrogate', [0xed, 0xa0, 0x80]],
  ['overlong-slash', [0xc0, 0xaf]],
  ['truncated-4byte', [0xf0, 0x9f, 0x98]],
  ['f5', [0xf5, 0x80, 0x80, 0x80]],
];

const NON_JSON: readonly string[] = [
  '',
  ' ',
  'null',
  'true',
  '42',
  '"str"',
  '{}',
  '[]',
  '[[]]',
  '[1,2]',
  '<?xml version="1.0"?><rpc/>',
  'jsonrpc=2.0&method=tools%2Flist',
  '{"jsonrpc":"2.0",',
  '{,}',
  "{'jsonrpc':'2.0'}",
  '{"jsonrpc":"2.0","id":1,"method":"tools/list",}',
  'NaN',
  '\u0000\u0000\u0000',
  '{"a":1}{"b":2}',
];

function mutateBytes(p: Pick, d: Draft): void {
  const buf = serialize(d) ?? Buffer.alloc(0);
  const op = p.int(0, 7);
  switch (op) {
    case 0: {
      if (buf.length < 2) break;
      const at = p.int(1, buf.length - 1);
      d.bytes = buf.subarray(0, at);
      d.labels.push(`bytes:truncate@${at}/${buf.length}`);
      return;
    }
    case 1: {
      const [name, seq] = p.one(BAD_UTF8);
      // Inside a string value (after an opening quote of a value) or anywhere.
      const text = buf.toString('latin1');
      const quotes: number[] = [];
      for (let i = text.indexOf(':"'); i >= 0 && quotes.length < 64; i = text.indexOf(':"', i + 1)) quotes.push(i + 2);
      const inString = quotes.length > 0 && p.chance(0.7);
      const at = inString ? p.one(quotes) : p.int(0, buf.length);
      d.bytes = Buffer.concat([buf.subarray(0, at), Buffer.from(seq), buf.subarray(at)]);
      d.labels.push(`bytes:bad-utf8:${name}@${inString ? 'string' : 'anywhere'}`);
      return;
    }
    case 2:
      d.bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), buf]);
      d.labels.push('bytes:bom');
      return;
    case 3: {
      const tail = p.one(['x', '}', '{}', '\n\n', '\u0000', buf.toString('utf8')]);
      d.bytes = Buffer.concat([buf, Buffer.from(tail, 'utf8')]);
      d.labels.push(`bytes:trailing:${JSON.stringify(tail.slice(0, 8))}`);
      return;
    }
    case 4: {
      const lead = p.one([' \n\t', '\u0000', '\ufeff\ufeff']);
      d.bytes = Buffer.concat([Buffer.from(lead, 'utf8'), buf]);
      d.labels.push(`bytes:leading:${JSON.stringify(lead)}`);
      return;
    }
    case 5: {
      // A duplicated key: JSON.parse keeps the last one.
      const text = buf.toString('utf8');
      if (!text.startsWith('{')) break;
      const [k, v] = p.one<[string, string]>([
        ['id', '{"x":1}'],
        ['id', '"dup"'],
        ['method', '"tools/list"'],
        ['method', '5'],
        ['params', '[]'],
        ['jsonrpc', '"1.0"'],
      ]);
      const first = p.chance(0.5);
      d.bytes = Buffer.from(first ? `{"${k}":${v},${text.slice(1)}` : `${text.slice(0, -1)},"${k}":${v}}`, 'utf8');
      d.labels.push(`bytes:dup-key:${k}=${v}@${first ? 'first' : 'last'}`);
      return;
    }
    case 6: {
      const text = p.one(NON_JSON);
      d.bytes = Buffer.from(text, 'utf8');
      d.labels.push(`bytes:non-json:${JSON.stringify(text).slice(0, 30)}`);
      return;
    }
    default: {
      // A NUL or a raw control character inside a string.
      const text = buf.toString('utf8');
      const at = text.indexOf(':"');
      if (at < 0) break;
      const ch = p.one(['\u0000', '\u0001', '\n', '\t', '\u007f']);
      d.bytes = Buffer.from(text.slice(0, at + 2) + ch + text.slice(at + 2), 'utf8');
      d.labels.push(`bytes:control-in-string:${JSON.stringify(ch)}`);
      return;
    }
  }
  d.bytes = Buffer.from(p.one(NON_JSON), 'utf8');
  d.labels.push('bytes:non-json');
}

function batch(p: Pick, ctx: FuzzContext, d: Draft): void {
  const n = p.one([0, 1, 2, 5, 40]);
  const items: string[] = [];
  for (let i = 0; i < n; i++) items.push(serialize(modernRequest(p, ctx, 'x'))!.toString('utf8'));
  const shape = p.int(0, 3);
  const text =
    shape === 0
      ? `[${items.join(',')}]`
      : shape === 1
        ? `[[${items.join(',')}]]`
        : shape === 2
          ? `[${items.join(',')},1,null]`
          : `[${items.join(',')},{"jsonrpc":"2.0","method":"notifications/initialized"}]`;
  d.bytes = Buffer.from(text, 'utf8');
  d.labels.push(`batch:${n}:shape${shape}`);
}

// ---------------------------------------------------------------------------------------------
// Head mutations.

const CONTENT_TYPES: ReadonlyArray<string | undefined> = [
  undefined,
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'application/json-seq',
  '',
  'application/*',
  '*/*',
  'application/json, text/plain',
  'text/event-stream',
];

const ACCEPTS: ReadonlyArray<string | undefined> = [
  undefined,
  'text/html',
  '',
  'application/json',
  'text/event-stream',
  '*/*',
  'application/*',
  'application/json;q=0, text/event-stream;q=0',
  'image/png, text/plain',
];

function mutateHead(p: Pick, d: Draft): void {
  const set = (k: string, v: string | undefined, label: string) => {
    if (v === undefined) delete d.headers[k];
    else d.headers[k] = v;
    d.labels.push(label);
  };
  const op = p.int(0, 9);
  switch (op) {
    case 0: {
      const v = p.one(CONTENT_TYPES);
      return set('content-type', v, `content-type:${v ?? 'drop'}`);
    }
    case 1: {
      const v = p.one(ACCEPTS);
      return set('accept', v, `accept:${v ?? 'drop'}`);
    }
    case 2: {
      const v = p.one<string | undefined>([
        undefined,
        'prompts/list',
        'TOOLS/CALL',
        'tools/call ',
        '',
        'x'.repeat(300),
        'tools/list, tools/call',
        '=?base64?dG9vbHMvbGlzdA==?=',
      ]);
      return set('mcp-method', v, `mcp-method:${v === undefined ? 'drop' : JSON.stringify(v.slice(0, 30))}`);
    }
    case 3: {
      const v = p.one<string | undefined>([
        undefined,
        'counter',
        '=?base64?ZWNobw==?=',
        '=?base64?!!not*base64!!?=',
        '=?BASE64?ZWNobw==?=',
        '  echo  ',
        '',
        'echo, echo',
        'test://nope',
        '=?base64??=',
      ]);
      return set('mcp-name', v, `mcp-name:${v === undefined ? 'drop' : JSON.stringify(v)}`);
    }
    case 4: {
      const [k, v] = p.one<[string, string | undefined]>([
        ['mcp-param-region', 'eu-central'],
        ['mcp-param-region', undefined],
        ['mcp-param-priority', 'abc'],
        ['mcp-param-priority', '5.0'],
        ['mcp-param-priority', '1e3'],
        ['mcp-param-verbose', 'TRUE'],
        ['mcp-param-foo', 'bar'],
        ['mcp-param-', 'x'],
        ['mcp-param-region', '=?base64?!!?='],
      ]);
      return set(k, v, `${k}:${v ?? 'drop'}`);
    }
    case 5:
    case 6: {
      const v = p.one<string | undefined>([
        undefined,
        LEGACY_VERSION,
        '2025-06-18',
        '1900-01-01',
        'garbage',
        '',
        ` ${MODERN_VERSION} `,
        `${MODERN_VERSION}, ${MODERN_VERSION}`,
        'x'.repeat(4000),
      ]);
      return set(
        'mcp-protocol-version',
        v,
        `mcp-protocol-version:${v === undefined ? 'drop' : JSON.stringify(v.slice(0, 30))}`,
      );
    }
    case 7: {
      const v = garbageSessionId(p);
      return set('mcp-session-id', v, `mcp-session-id:${JSON.stringify(v.slice(0, 30))}`);
    }
    case 8:
      return set('last-event-id', p.one(['0', 'garbage', '-1', 'x'.repeat(2000)]), 'last-event-id');
    default:
      d.chunked = true;
      d.labels.push('chunked');
  }
}

function garbageSessionId(p: Pick): string {
  return p.one([
    p.word(32, '0123456789abcdef'),
    '00000000-0000-0000-0000-000000000000',
    '0.abc',
    '1.abc',
    '-1.abc',
    '99999999999999999999.x',
    'NaN.x',
    '1e3.x',
    '0x1.x',
    '.',
    '0.',
    '__proto__.x',
    'constructor',
    '../../etc/passwd',
    'null',
    'x'.repeat(8000),
    ' ',
    'a,b',
    '0.' + p.word(36, '0123456789abcdef-'),
  ]);
}

// ---------------------------------------------------------------------------------------------
// Host and Origin: the spec's DNS-rebinding rule (403) and RFC 9112 §3.2 (400).

const LOOPBACK_HOSTS = (port: number) => [
  `127.0.0.1:${port}`,
  `localhost:${port}`,
  'localhost',
  `[::1]:${port}`,
  `LOCALHOST:${port}`,
  '127.0.0.1',
];
const FOREIGN_HOSTS = (port: number) => [
  'evil.com',
  `evil.com:${port}`,
  '127.0.0.1.evil.com',
  `localhost.evil.com:${port}`,
  '10.0.0.1',
  '[::2]:80',
  'xn--e1afmkfd.xn--p1ai',
];
/** Not `uri-host [ ":" port ]` [RFC 9110 §7.2, RFC 3986 §3.2]. */
const MALFORMED_HOSTS = (port: number) => [
  '[::1]evil.com',
  `[::1]:${port}evil`,
  'localhost:abc',
  `localhost:${port}:${port}`,
  `local host:${port}`,
  'localhost/evil',
  `localhost@evil.com:${port}`,
  '[::1',
  '::1',
  `127.0.0.1:${port}, evil.com`,
];

function mutateHost(p: Pick, d: Draft, ctx: FuzzContext): void {
  const op = p.int(0, 3);
  if (op === 0) {
    const h = p.one(FOREIGN_HOSTS(ctx.port));
    d.headers.host = h;
    d.expect = { status: 403, why: `Host ${h} is not this server (DNS rebinding) => 403 [SHTTP]` };
    d.labels.push(`host:foreign:${h}`);
  } else if (op === 1) {
    const h = p.one(MALFORMED_HOSTS(ctx.port));
    d.headers.host = h;
    d.hostFault = true;
    d.expect = { status: 400, why: `Host ${JSON.stringify(h)} is not a valid uri-host[:port] => 400 [RFC 9112 §3.2]` };
    d.labels.push(`host:malformed:${h}`);
  } else if (op === 2) {
    const h = p.one(LOOPBACK_HOSTS(ctx.port));
    d.headers.host = h;
    d.labels.push(`host:loopback:${h}`);
  } else {
    const o = p.one([
      'http://evil.com',
      'null',
      'garbage',
      `http://127.0.0.1.evil.com:${ctx.port}`,
      `http://localhost:${ctx.port}`,
      `http://127.0.0.1:${ctx.port}`,
    ]);
    d.headers.origin = o;
    const ok = o === `http://localhost:${ctx.port}` || o === `http://127.0.0.1:${ctx.port}`;
    if (!ok) d.expect = { status: 403, why: `Origin ${o} is present and not allowed => 403 [SHTTP]` };
    d.labels.push(`origin:${o}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Legacy traffic.

function legacyInitialize(p: Pick, ctx: FuzzContext): Draft {
  const d = baseDraft('legacy/initialize', ctx, 'POST');
  d.headers['content-type'] = 'application/json';
  d.headers.accept = 'application/json, text/event-stream';
  const ps: JsonObject = {
    protocolVersion: p.one<Json>([
      LEGACY_VERSION,
      '2025-06-18',
      '2025-03-26',
      '2024-11-05',
      MODERN_VERSION,
      '1900-01-01',
      5,
      null,
      '',
    ]),
    capabilities: p.chance(0.5) ? {} : p.one(CAPABILITY_SHAPES),
    clientInfo: p.chance(0.7) ? { name: 'causeway-fuzz', version: '1.0.0' } : p.one(CLIENT_INFO_VALUES),
  };
  if (p.chance(0.1)) delete ps[p.one(['protocolVersion', 'capabilities', 'clientInfo'])];
  d.body = { jsonrpc: '2.0', id: modernId(p), method: 'initialize', params: ps };
  d.labels.push(`init:v=${JSON.stringify(ps.protocolVersion)}`, `init:caps=${JSON.stringify(ps.capabilities)}`);
  if (p.chance(0.3)) {
    const v = p.one([LEGACY_VERSION, MODERN_VERSION, 'garbage']);
    d.headers['mcp-protocol-version'] = v;
    d.labels.push(`mcp-protocol-version:${v}`);
  }
  if (p.chance(0.1)) {
    ps._meta = modernMeta();
    d.headers['mcp-protocol-version'] = MODERN_VERSION;
    d.headers['mcp-method'] = 'initialize';
    d.labels.push('init:modern-_meta');
  }
  if (p.chance(0.1)) {
    d.headers['mcp-session-id'] = garbageSessionId(p);
    d.labels.push('mcp-session-id:garbage');
  }
  if (p.chance(0.1) && !d.big) {
    const shape = p.one(['[', '{'] as const);
    const depth = p.logInt(1_000, 100_000);
    ps.capabilities = hole(d, deepText(shape, depth));
    d.big = true;
    d.labels.push(`deep:init.capabilities:${shape}x${depth}`);
  }
  return d;
}

function legacyRequest(p: Pick, ctx: FuzzContext, family: string, sessionId: string | undefined): Draft {
  const d = baseDraft(family, ctx, 'POST');
  d.headers['content-type'] = 'application/json';
  d.headers.accept = 'application/json, text/event-stream';
  d.headers['mcp-protocol-version'] = LEGACY_VERSION;
  if (sessionId !== undefined) d.headers['mcp-session-id'] = sessionId;
  const id = modernId(p);
  const [method, ps] = p.weighted<[string, JsonObject | undefined]>([
    [4, ['tools/list', {}]],
    [4, ['tools/call', { name: 'echo', arguments: { text: p.word(5) } }]],
    [1, ['tools/call', { name: 'test_simple_text', arguments: {} }]],
    [1, ['tools/call', { name: 'test_error_handling', arguments: {} }]],
    [1, ['tools/call', { name: 'counter', arguments: {} }]],
    [1, ['tools/call', { name: 'no_such_tool', arguments: {} }]],
    [1, ['prompts/list', {}]],
    [1, ['resources/read', { uri: 'test://static-text' }]],
    [1, ['ping', undefined]],
    [1, ['logging/setLevel', { level: p.one(['debug', 'loud']) }]],
    [
      1,
      [
        'completion/complete',
        { ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'a' } },
      ],
    ],
  ]);
  const body: JsonObject = { jsonrpc: '2.0', id, method };
  if (ps !== undefined) body.params = ps;
  d.body = body;
  d.labels.push(`legacy:${method}`);
  if (p.chance(0.1)) {
    d.body = p.one<JsonObject>([
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      { jsonrpc: '2.0', id: 77, result: {} },
      { jsonrpc: '2.0', id: 78, error: { code: -1, message: 'x' } },
    ]);
    d.labels.push('legacy:notification-or-response');
  }
  return d;
}

function legacyGetDelete(p: Pick, ctx: FuzzContext): Draft {
  const method = p.one(['GET', 'DELETE']);
  const d = baseDraft('legacy/get-delete', ctx, method);
  if (method === 'GET') d.headers.accept = p.one(['text/event-stream', 'application/json', '*/*']);
  d.headers['mcp-session-id'] = garbageSessionId(p);
  if (p.chance(0.5)) d.headers['mcp-protocol-version'] = p.one([LEGACY_VERSION, MODERN_VERSION, 'garbage']);
  if (p.chance(0.2)) d.headers['last-event-id'] = p.one(['0', 'x_1', 'garbage']);
  d.labels.push(`${method}:session=${JSON.stringify(d.headers['mcp-session-id']!.slice(0, 30))}`);
  return d;
}

// ---------------------------------------------------------------------------------------------
// HTTP method and path.

function methodOrPath(p: Pick, ctx: FuzzContext): Draft {
  const d = modernRequest(p, ctx, 'http/method-path');
  if (p.chance(0.5)) {
    const method = p.one(['GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD']);
    d.method = method;
    if (method === 'GET' || method === 'HEAD' || method === 'DELETE' || p.chance(0.5)) d.body = undefined;
    if (method !== 'OPTIONS' && method !== 'HEAD') {
      d.expect = { status: 405, why: `${method} at the MCP endpoint without a legacy session => 405 [SHTTP]` };
    }
    d.labels.push(`http-method:${method}${d.body === undefined ? '' : '+body'}`);
  } else {
    const path = p.one([
      '/mcp/',
      '/MCP',
      '/mcp?x=1',
      '/mcp?',
      '//mcp',
      '/mcp/../mcp',
      '/%6dcp',
      '/mcp%00',
      '/',
      '/mcp;x',
      '/mcpx',
      `/${'a'.repeat(5000)}`,
      '/mcp#frag',
    ]);
    d.path = path;
    d.labels.push(`path:${path.slice(0, 30)}`);
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Raw bytes: what no HTTP client sends.

function headLines(d: Draft, skip: ReadonlySet<string> = new Set()): string[] {
  return Object.entries(d.headers)
    .filter(([k]) => !skip.has(k))
    .map(([k, v]) => `${k}: ${v}`);
}

function rawFrom(
  d: Draft,
  body: Buffer,
  lines: string[],
  requestLine = `${d.method} ${d.path} HTTP/1.1`,
  framing?: string[],
): Buffer {
  const frame = framing ?? [`Content-Length: ${body.length}`];
  return Buffer.concat([
    Buffer.from([requestLine, ...lines, ...frame, 'Connection: close', '', ''].join('\r\n'), 'latin1'),
    body,
  ]);
}

interface RawBuilt {
  raw: Buffer;
  label: string;
  expect?: ExpectedStatus;
  hostFault?: boolean;
}

function rawCase(p: Pick, ctx: FuzzContext, d: Draft, legacy: boolean): RawBuilt {
  const body = serialize(d) ?? Buffer.alloc(0);
  const host = hostOf(ctx);
  const noHost = new Set(['host']);
  const hostLine = `Host: ${host}`;
  const base = headLines(d, noHost);
  const op = p.int(0, 15);
  switch (op) {
    case 0: {
      const [a, b] = p.one<[string, string]>([
        [host, host],
        [host, 'evil.com'],
        ['evil.com', host],
        [host, `localhost:${ctx.port}`],
      ]);
      return {
        raw: rawFrom(d, body, [`Host: ${a}`, ...base, `Host: ${b}`]),
        label: `raw:duplicate-host:${a}|${b}`,
        expect: { status: 400, why: 'more than one Host header field line => 400 [RFC 9112 §3.2]' },
        hostFault: true,
      };
    }
    case 1:
      return {
        raw: rawFrom(d, body, base),
        label: 'raw:no-host',
        expect: { status: 400, why: 'an HTTP/1.1 request without Host => 400 [RFC 9112 §3.2]' },
        hostFault: true,
      };
    case 2: {
      const [name, bytes] = p.one<[string, number[]]>([
        ['nul', [0x00]],
        ['del', [0x7f]],
        ['ff', [0xff]],
        ['utf8', [0xc3, 0xa9]],
        ['bare-cr', [0x0d]],
      ]);
      const bad = Buffer.concat([
        Buffer.from(`Host: 127.0.0.1`, 'latin1'),
        Buffer.from(bytes),
        Buffer.from(`:${ctx.port}`, 'latin1'),
      ]);
      const headText = Buffer.from(`${d.method} ${d.path} HTTP/1.1\r\n`, 'latin1');
      const rest = Buffer.from(
        `\r\n${[...base, `Content-Length: ${body.length}`, 'Connection: close', '', ''].join('\r\n')}`,
        'latin1',
      );
      return {
        raw: Buffer.concat([headText, bad, rest, body]),
        label: `raw:host-bad-byte:${name}`,
        expect: { status: 400, why: 'a Host field with an invalid value => 400 [RFC 9112 §3.2]' },
        hostFault: true,
      };
    }
    case 3: {
      const [header, bytes] = p.one<[string, number[]]>([
        ['Mcp-Method', [0xc3, 0xa9]],
        ['Mcp-Name', [0xff]],
        ['Mcp-Name', [0xe2, 0x98, 0x83]],
        ['Mcp-Method', [0x01]],
      ]);
      const key = header.toLowerCase();
      const value = d.headers[key] ?? 'tools/list';
      const lines = base.filter((l) => !l.toLowerCase().startsWith(`${key}:`));
      const head = Buffer.from(
        [`${d.method} ${d.path} HTTP/1.1`, hostLine, ...lines, `${header}: `].join('\r\n'),
        'latin1',
      );
      const tail = Buffer.from(
        `\r\n${[`Content-Length: ${body.length}`, 'Connection: close', '', ''].join('\r\n')}`,
        'latin1',
      );
      return {
        raw: Buffer.concat([head, Buffer.from(value, 'latin1'), Buffer.from(bytes), tail, body]),
        label: `raw:${key}-bytes:${bytes.map((b) => b.toString(16)).join('-')}`,
        expect: legacy
          ? undefined
          : {
              status: 400,
              why: `${header} with characters that are not plain visible ASCII (must be base64) => 400 [SHTTP]`,
            },
      };
    }
    case 4: {
      const line = p.one([
        'Mcp Method: tools/list',
        'Mcp-Method\u0000: x',
        '(bad): x',
        'Host : x',
        ': empty-name',
        'NoColon',
        ' folded: x',
        'X-Ok: a\r\n continued',
      ]);
      return { raw: rawFrom(d, body, [hostLine, ...base, line]), label: `raw:bad-header-line:${JSON.stringify(line)}` };
    }
    case 5: {
      const rl = p.one([
        `${d.method} ${d.path} HTTP/1.2`,
        `${d.method} ${d.path} HTTP/2.0`,
        `${d.method}  ${d.path} HTTP/1.1`,
        `${d.method} ${d.path}`,
        `post ${d.path} HTTP/1.1`,
        `POST ${d.path} HTTP/1.1 extra`,
        'GARBAGE',
        `POST http://evil.com${d.path} HTTP/1.1`,
        `POST http://${host}${d.path} HTTP/1.1`,
        `POST * HTTP/1.1`,
        `POST ${d.path}\u0000 HTTP/1.1`,
        `BREW ${d.path} HTTP/1.1`,
      ]);
      return {
        raw: rawFrom(d, body, [hostLine, ...base], rl),
        label: `raw:request-line:${JSON.stringify(rl.slice(0, 40))}`,
      };
    }
    case 6: {
      const framing = p.one<string[]>([
        ['Content-Length: abc'],
        ['Content-Length: -1'],
        [`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`],
        [`Content-Length: ${body.length}`, 'Transfer-Encoding: chunked'],
        ['Transfer-Encoding: gzip'],
        ['Transfer-Encoding: chunked, gzip'],
        [`Content-Length: ${body.length}, ${body.length}`],
        [`Content-Length: +${body.length}`],
      ]);
      return {
        raw: rawFrom(d, body, [hostLine, ...base], undefined, framing),
        label: `raw:framing:${framing.join('|')}`,
      };
    }
    case 7: {
      // Chunked bodies: well-formed, bad size, missing terminator (the body timeout answers).
      const kind = p.one(['ok', 'bad-size', 'no-terminator', 'huge-size', 'extension']);
      const hex = body.length.toString(16);
      const chunks =
        kind === 'ok'
          ? `${hex}\r\n${body.toString('latin1')}\r\n0\r\n\r\n`
          : kind === 'bad-size'
            ? `zz\r\n${body.toString('latin1')}\r\n0\r\n\r\n`
            : kind === 'no-terminator'
              ? `${hex}\r\n${body.toString('latin1')}\r\n`
              : kind === 'huge-size'
                ? `ffffffffffffffffff\r\n${body.toString('latin1')}\r\n0\r\n\r\n`
                : `${hex};name=value\r\n${body.toString('latin1')}\r\n0\r\n\r\n`;
      return {
        raw: Buffer.concat([
          rawFrom(d, Buffer.alloc(0), [hostLine, ...base], undefined, ['Transfer-Encoding: chunked']),
          Buffer.from(chunks, 'latin1'),
        ]),
        label: `raw:chunked:${kind}`,
      };
    }
    case 8: {
      // Content-Length longer than the body: the body timeout must answer (408), not hang.
      const cl = body.length + p.int(1, 100);
      return {
        raw: rawFrom(d, body, [hostLine, ...base], undefined, [`Content-Length: ${cl}`]),
        label: `raw:short-body:${body.length}/${cl}`,
      };
    }
    case 9: {
      // Content-Length shorter than the body: truncated JSON, then junk the parser sees as the next request.
      const cl = Math.max(0, body.length - p.int(1, Math.max(1, body.length - 1)));
      return {
        raw: rawFrom(d, body, [hostLine, ...base], undefined, [`Content-Length: ${cl}`]),
        label: `raw:long-body:${body.length}/${cl}`,
      };
    }
    case 10:
      return { raw: rawFrom(d, body, [hostLine, ...base, 'Expect: 100-continue']), label: 'raw:expect-100-continue' };
    case 11: {
      // Two requests back to back on one connection (the second closes it).
      const first = rawFrom(d, body, [hostLine, ...base], undefined, [`Content-Length: ${body.length}`])
        .toString('latin1')
        .replace('Connection: close\r\n', '');
      return {
        raw: Buffer.concat([Buffer.from(first, 'latin1'), rawFrom(d, body, [hostLine, ...base])]),
        label: 'raw:pipelined',
      };
    }
    case 12:
      return {
        raw: rawFrom(d, body, [hostLine, ...base.map((l) => l.replace(/^([^:]+)/, (n) => n.toUpperCase()))]),
        label: 'raw:upper-case-names',
      };
    case 13:
      return {
        raw: Buffer.concat([
          Buffer.from(
            [`${d.method} ${d.path} HTTP/1.0`, hostLine, ...base, `Content-Length: ${body.length}`, '', ''].join(
              '\r\n',
            ),
            'latin1',
          ),
          body,
        ]),
        label: 'raw:http-1.0',
      };
    case 14:
      return {
        raw: Buffer.from(
          [
            `${d.method} ${d.path} HTTP/1.1`,
            hostLine,
            ...base,
            `Content-Length: ${body.length}`,
            'Connection: close',
            '',
            '',
          ].join('\n') + body.toString('latin1'),
          'latin1',
        ),
        label: 'raw:bare-lf',
      };
    default: {
      const line = p.one([
        'Connection: keep-alive, Upgrade',
        'Upgrade: h2c',
        'Upgrade: websocket',
        'Transfer-Encoding: identity',
        'TE: trailers',
        'Content-Encoding: gzip',
      ]);
      return { raw: rawFrom(d, body, [hostLine, ...base, line]), label: `raw:header:${line}` };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The case.

export const FAMILIES = [
  'modern/valid',
  'modern/structure',
  'modern/meta',
  'modern/deep',
  'modern/wide',
  'modern/bytes',
  'modern/batch',
  'modern/head',
  'http/host-origin',
  'http/method-path',
  'http/raw',
  'legacy/initialize',
  'legacy/garbage-session',
  'legacy/get-delete',
  'legacy/in-session',
  'legacy/no-session',
] as const;

const FAMILY_WEIGHTS: ReadonlyArray<readonly [number, (typeof FAMILIES)[number]]> = [
  [7, 'modern/valid'],
  [18, 'modern/structure'],
  [11, 'modern/meta'],
  [5, 'modern/deep'],
  [4, 'modern/wide'],
  [9, 'modern/bytes'],
  [3, 'modern/batch'],
  [10, 'modern/head'],
  [5, 'http/host-origin'],
  [3, 'http/method-path'],
  [6, 'http/raw'],
  [5, 'legacy/initialize'],
  [4, 'legacy/garbage-session'],
  [2, 'legacy/get-delete'],
  [5, 'legacy/in-session'],
  [2, 'legacy/no-session'],
];

function structural(p: Pick, d: Draft, n: number): void {
  for (let i = 0; i < n; i++) p.weighted(STRUCTURAL)(p, d);
}

/** Header values node:http will send as they are. */
const HTTP_SAFE = /^[\t\x20-\x7e]*$/;

function finish(seed: number, index: number, d: Draft, rawBuilt?: RawBuilt): FuzzCase {
  const requestId = requestIdOf(seed, index);
  let body = serialize(d);
  if (body && body.length > MAX_FUZZ_BODY) {
    body = body.subarray(0, MAX_FUZZ_BODY);
    d.labels.push(`bytes:cut-to-${MAX_FUZZ_BODY}`);
  }
  if (d.method === 'GET' || d.method === 'HEAD') body = undefined;
  const headers: Record<string, string> = { ...d.headers, 'x-request-id': requestId };
  let transport: 'http' | 'raw' = 'http';
  let rawBytes = rawBuilt?.raw;
  const unsafe =
    Object.entries(headers).some(([k, v]) => !HTTP_SAFE.test(v) || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) ||
    !/^[\x21-\x7e]+$/.test(d.path);
  if (rawBytes || unsafe) {
    transport = 'raw';
    if (!rawBytes) {
      const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
      rawBytes = rawFrom(d, body ?? Buffer.alloc(0), lines);
      d.labels.push('raw:unsafe-for-node-http');
    }
  }
  const legacy = expectedLegacy(d.method, headers, body);
  return {
    seed,
    index,
    family: d.family,
    labels: d.labels,
    transport,
    method: d.method,
    path: d.path,
    headers,
    body,
    chunked: d.chunked,
    raw: rawBytes,
    expect: rawBuilt?.expect ?? d.expect,
    hostFault: rawBuilt?.hostFault ?? d.hostFault,
    legacy,
    requestId,
  };
}

const LEGACY_VERSIONS = new Set([LEGACY_VERSION, '2025-06-18', '2025-03-26', '2024-11-05']);

/**
 * Whether the request is legacy traffic by the dual-era rules [VER §2.4, SHTTP]: inside a legacy
 * session (Mcp-Session-Id), or an initialize / a request without modern `_meta` whose
 * MCP-Protocol-Version is a legacy revision or absent (absent means 2025-03-26).
 */
export function expectedLegacy(method: string, headers: Record<string, string>, body: Buffer | undefined): boolean {
  const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  if (h['mcp-session-id'] !== undefined) return true;
  if (method !== 'POST' || body === undefined) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return false;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return false;
  const o = parsed as { method?: unknown; params?: unknown };
  const ps = o.params;
  if (typeof ps === 'object' && ps !== null && !Array.isArray(ps)) {
    const m = (ps as { _meta?: unknown })._meta;
    if (
      typeof m === 'object' &&
      m !== null &&
      !Array.isArray(m) &&
      (m as Record<string, unknown>)[META_VERSION] !== undefined
    )
      return false;
  }
  if (o.method === 'initialize') return true;
  const v = h['mcp-protocol-version']?.trim();
  return v === undefined || LEGACY_VERSIONS.has(v);
}

/** The x-request-id of a case: Causeway logs it as reqId, so a log line leads back to its case. */
export function requestIdOf(seed: number, index: number): string {
  return `fuzz-${seed}-${index}`;
}

/** Case `index` of `seed`. */
export function makeCase(seed: number, index: number, ctx: FuzzContext): FuzzCase {
  const p = new Pick(caseRng(seed, index));
  let family = p.weighted(FAMILY_WEIGHTS);
  if (family === 'legacy/in-session' && ctx.sessionId === undefined) family = 'legacy/garbage-session';
  let d: Draft;
  let rawBuilt: RawBuilt | undefined;
  switch (family) {
    case 'modern/valid':
      d = modernRequest(p, ctx, family);
      break;
    case 'modern/structure':
      d = modernRequest(p, ctx, family);
      structural(
        p,
        d,
        p.weighted([
          [6, 1],
          [3, 2],
          [1, 3],
        ] as const),
      );
      if (p.chance(0.5)) remirror(d);
      break;
    case 'modern/meta':
      d = modernRequest(p, ctx, family);
      mutateMeta(p, d);
      if (p.chance(0.3)) mutateMeta(p, d);
      break;
    case 'modern/deep':
      d = modernRequest(p, ctx, family);
      mutateDeep(p, d);
      if (p.chance(0.2)) structural(p, d, 1);
      break;
    case 'modern/wide':
      d = modernRequest(p, ctx, family);
      mutateWide(p, d);
      if (p.chance(0.2)) structural(p, d, 1);
      break;
    case 'modern/bytes':
      d = modernRequest(p, ctx, family);
      if (p.chance(0.3)) structural(p, d, 1);
      mutateBytes(p, d);
      break;
    case 'modern/batch':
      d = modernRequest(p, ctx, family);
      batch(p, ctx, d);
      break;
    case 'modern/head':
      d = modernRequest(p, ctx, family);
      mutateHead(p, d);
      if (p.chance(0.4)) mutateHead(p, d);
      if (p.chance(0.2)) structural(p, d, 1);
      break;
    case 'http/host-origin':
      d = p.chance(0.8) ? modernRequest(p, ctx, family) : legacyRequest(p, ctx, family, ctx.sessionId);
      d.family = family;
      mutateHost(p, d, ctx);
      if (p.chance(0.2)) structural(p, d, 1);
      break;
    case 'http/method-path':
      d = methodOrPath(p, ctx);
      break;
    case 'http/raw':
      d = p.chance(0.8) ? modernRequest(p, ctx, family) : legacyRequest(p, ctx, family, ctx.sessionId);
      d.family = family;
      d.headers['x-request-id'] = requestIdOf(seed, index);
      rawBuilt = rawCase(p, ctx, d, expectedLegacy(d.method, d.headers, serialize(d)));
      d.labels.push(rawBuilt.label);
      break;
    case 'legacy/initialize':
      d = legacyInitialize(p, ctx);
      if (p.chance(0.2)) structural(p, d, 1);
      if (p.chance(0.1)) mutateBytes(p, d);
      break;
    case 'legacy/garbage-session':
      d = legacyRequest(p, ctx, family, garbageSessionId(p));
      if (p.chance(0.3)) structural(p, d, 1);
      if (p.chance(0.1)) mutateBytes(p, d);
      break;
    case 'legacy/get-delete':
      d = legacyGetDelete(p, ctx);
      break;
    case 'legacy/in-session':
      d = legacyRequest(p, ctx, family, ctx.sessionId);
      structural(p, d, p.int(0, 2));
      if (p.chance(0.2)) mutateBytes(p, d);
      else if (p.chance(0.15)) mutateDeep(p, d);
      break;
    default:
      d = legacyRequest(p, ctx, family, undefined);
      if (p.chance(0.5)) delete d.headers['mcp-protocol-version'];
      if (p.chance(0.3)) structural(p, d, 1);
      break;
  }
  // A mutated head goes with a small body: an early refusal then never races a big upload.
  if (
    (family === 'modern/head' || family === 'http/host-origin' || family === 'http/method-path') &&
    (serialize(d)?.length ?? 0) > SMALL_BODY
  ) {
    d.bytes = Buffer.from(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } }),
      'utf8',
    );
    d.labels.push('body:replaced-small');
  }
  return finish(seed, index, d, rawBuilt);
}

/** A case for a failure message: what was sent, cut to a readable length, and how to replay it. */
export function describeCase(c: FuzzCase, maxBody = 600): string {
  const bytes = c.transport === 'raw' ? c.raw : c.body;
  const shown =
    bytes === undefined
      ? '(none)'
      : `${bytes.length} ` +
        `bytes: ${JSON.stringify(bytes.subarray(0, maxBody).toString('latin1'))}${bytes.length > maxBody ? ' …' : ''}`;
  return [
    `seed=${c.seed} case=${c.index} family=${c.family} [${c.labels.join(', ')}]`,
    `replay: FUZZ_REPLAY=${c.seed}:${c.index} npx tap dist/test/ingress/fuzz.test.js (or npm run fuzz)`,
    `${c.transport === 'raw' ? 'raw ' : ''}${c.method} ${c.path.slice(0, 80)}` +
      (c.transport === 'http' ? ` headers=${JSON.stringify(c.headers).slice(0, 600)}` : '') +
      (c.chunked ? ' (chunked)' : ''),
    `${c.transport === 'raw' ? 'bytes' : 'body'} ${shown}`,
  ].join('\n');
}
