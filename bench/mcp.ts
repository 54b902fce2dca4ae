// The MCP messages the bench sends, in both eras: legacy (2025-11-25, inside an Mcp-Session-Id)
// and modern (2026-07-28, stateless, `_meta` on every request). Bodies carry `"[<id>]"` where
// autocannon puts a unique id per request (the SDK upstream needs distinct ids per session).

export const LEGACY_VERSION = '2025-11-25';
export const MODERN_VERSION = '2026-07-28';
export const ID_SLOT = '[<id>]';

export type Era = 'legacy' | 'modern';
export type Workload = 'call' | 'list' | 'progress' | 'multiround';

export const WORKLOADS: readonly Workload[] = ['call', 'list', 'progress', 'multiround'];

export const WORKLOAD_LABEL: Record<Workload, string> = {
  call: 'small tools/call',
  list: 'tools/list (1,000 tools)',
  progress: 'tools/call streaming 10 progress notifications',
  multiround: 'multi-round tools/call (2 rounds)',
};

/** Capabilities every bench client declares: the multi-round tool asks for elicitation. */
export const CLIENT_CAPS = { elicitation: {} };

export const MULTI_ROUND_TOOL = 'test_input_required_result_multi_round';
export const PROGRESS_STEPS = 10;

export interface HttpRequestSpec {
  method: 'POST';
  headers: Record<string, string>;
  body: string;
}

interface Call {
  method: string;
  params: Record<string, unknown>;
  name?: string;
  progressToken?: string;
}

function callOf(workload: Exclude<Workload, 'multiround'>): Call {
  switch (workload) {
    case 'call':
      return { method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' } }, name: 'echo' };
    case 'list':
      return { method: 'tools/list', params: {} };
    case 'progress':
      return {
        method: 'tools/call',
        params: { name: 'progress_many', arguments: { steps: PROGRESS_STEPS } },
        name: 'progress_many',
        progressToken: 'bench-progress',
      };
  }
}

export function legacyHeaders(sessionId: string, protocolVersion: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': sessionId,
    'mcp-protocol-version': protocolVersion,
  };
}

export function modernHeaders(
  method: string,
  name?: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  const h: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN_VERSION,
    'mcp-method': method,
    ...extra,
  };
  if (name !== undefined) h['mcp-name'] = name;
  return h;
}

export function modernMeta(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
    'io.modelcontextprotocol/clientCapabilities': CLIENT_CAPS,
    'io.modelcontextprotocol/clientInfo': { name: 'causeway-bench', version: '1.0.0' },
    ...extra,
  };
}

/** The body with `"[<id>]"` as its JSON-RPC id (autocannon's idReplacement fills it in). */
function withIdSlot(message: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id: ID_SLOT, ...message });
}

export interface Target {
  era: Era;
  url: string;
  /** Legacy only: the session the requests run in. */
  sessionId?: string;
  protocolVersion?: string;
}

/** One HTTP request of an autocannon workload (everything but the multi-round one). */
export function requestFor(target: Target, workload: Exclude<Workload, 'multiround'>): HttpRequestSpec {
  const call = callOf(workload);
  if (target.era === 'legacy') {
    const params =
      call.progressToken === undefined ? call.params : { ...call.params, _meta: { progressToken: call.progressToken } };
    return {
      method: 'POST',
      headers: legacyHeaders(target.sessionId!, target.protocolVersion ?? LEGACY_VERSION),
      body: withIdSlot({ method: call.method, params }),
    };
  }
  const meta = modernMeta(call.progressToken === undefined ? {} : { progressToken: call.progressToken });
  return {
    method: 'POST',
    headers: modernHeaders(call.method, call.name),
    body: withIdSlot({ method: call.method, params: { ...call.params, _meta: meta } }),
  };
}

/** Messages of an SSE body (the data of each event, JSON-parsed), or the one JSON body. */
export function messagesOf(contentType: string, text: string): any[] {
  if (!contentType.startsWith('text/event-stream')) return text === '' ? [] : [JSON.parse(text)];
  const out: unknown[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data !== '') out.push(JSON.parse(data));
  }
  return out;
}

/** The answer a bench client gives to an ask (elicitation, sampling, roots). */
export function answerAsk(method: string, params: any): Record<string, unknown> {
  if (method === 'elicitation/create') {
    const props = (params?.requestedSchema?.properties ?? {}) as Record<string, { type?: string }>;
    const content: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(props))
      content[k] = v.type === 'boolean' ? true : v.type === 'number' || v.type === 'integer' ? 1 : 'bench';
    return { action: 'accept', content };
  }
  if (method === 'sampling/createMessage')
    return { role: 'assistant', content: { type: 'text', text: 'bench' }, model: 'bench' };
  if (method === 'roots/list') return { roots: [] };
  return {};
}

export interface LegacySession {
  sessionId: string;
  protocolVersion: string;
}

/** initialize + notifications/initialized, as a legacy client does (directly, or through a proxy). */
export async function openLegacySession(url: string): Promise<LegacySession> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: LEGACY_VERSION,
        capabilities: CLIENT_CAPS,
        clientInfo: { name: 'causeway-bench', version: '1.0.0' },
      },
    }),
  });
  const text = await res.text();
  const sessionId = res.headers.get('mcp-session-id');
  if (res.status !== 200 || !sessionId)
    throw new Error(`initialize through ${url} failed: HTTP ${res.status} ${text.slice(0, 200)}`);
  const [msg] = messagesOf(res.headers.get('content-type') ?? '', text);
  const protocolVersion = String(msg?.result?.protocolVersion ?? LEGACY_VERSION);
  const ack = await fetch(url, {
    method: 'POST',
    headers: legacyHeaders(sessionId, protocolVersion),
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await ack.text();
  if (ack.status !== 202 && ack.status !== 200)
    throw new Error(`notifications/initialized through ${url}: HTTP ${ack.status}`);
  return { sessionId, protocolVersion };
}

/** One request of a workload, checked: it must succeed (used to validate a path before timing it). */
export async function probe(target: Target, workload: Exclude<Workload, 'multiround'>): Promise<any> {
  const spec = requestFor(target, workload);
  const res = await fetch(target.url, {
    method: 'POST',
    headers: spec.headers,
    body: spec.body.replace(ID_SLOT, 'probe-1'),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${workload} via ${target.url}: HTTP ${res.status} ${text.slice(0, 300)}`);
  const msgs = messagesOf(res.headers.get('content-type') ?? '', text);
  const last = msgs[msgs.length - 1];
  if (!last || last.error || !last.result)
    throw new Error(`${workload} via ${target.url}: no result: ${text.slice(0, 300)}`);
  return { result: last.result, messages: msgs.length };
}
