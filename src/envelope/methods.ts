// The 2026-07-28 method registry: what the modern face serves and how each method is checked.
// A method removed in 2026 (ping, initialize, logging/setLevel, resources/subscribe, ...) is
// simply absent, so it gets 404 / -32601 like any unknown method [SHTTP][SEP-2575].

export type ServerCapabilityName = 'tools' | 'prompts' | 'resources' | 'completions';

export interface MethodSpec {
  /** Body field mirrored in the Mcp-Name header, when the method has one. */
  nameParam?: 'name' | 'uri' | 'taskId';
  /** Result carries ttlMs / cacheScope [CACHE]. */
  cacheable: boolean;
  /** May answer input_required [MRTR]. */
  multiRound: boolean;
  /** Upstream capability that must be advertised, else -32601. */
  capability?: ServerCapabilityName;
  /** Relayed to the upstream as the same legacy method. */
  forwarded: boolean;
  /** Served by src/tasks for clients that declare the tasks extension [SEP-2663]. */
  task?: true;
}

export const MODERN_METHODS: Readonly<Record<string, MethodSpec>> = {
  'server/discover': { cacheable: true, multiRound: false, forwarded: false },
  'tools/list': { cacheable: true, multiRound: false, capability: 'tools', forwarded: true },
  'tools/call': { nameParam: 'name', cacheable: false, multiRound: true, capability: 'tools', forwarded: true },
  'prompts/list': { cacheable: true, multiRound: false, capability: 'prompts', forwarded: true },
  'prompts/get': { nameParam: 'name', cacheable: false, multiRound: true, capability: 'prompts', forwarded: true },
  'resources/list': { cacheable: true, multiRound: false, capability: 'resources', forwarded: true },
  'resources/templates/list': { cacheable: true, multiRound: false, capability: 'resources', forwarded: true },
  'resources/read': { nameParam: 'uri', cacheable: true, multiRound: true, capability: 'resources', forwarded: true },
  'completion/complete': { cacheable: false, multiRound: false, capability: 'completions', forwarded: true },
  // The skills extension [SKILLS]: answered by a mount's skills folder (src/skills), else relayed.
  'skills/list': { cacheable: true, multiRound: false, forwarded: true },
  'skills/get': { cacheable: true, multiRound: false, forwarded: true },
  'resources/directory/read': { cacheable: false, multiRound: false, capability: 'resources', forwarded: true },
  // Served by src/subscriptions from the legacy GET stream and resources/subscribe [SUBS].
  'subscriptions/listen': { cacheable: false, multiRound: false, forwarded: false },
  // The tasks extension: Mcp-Name carries the taskId. tasks/result and tasks/list are gone [SEP-2663].
  'tasks/get': { nameParam: 'taskId', cacheable: false, multiRound: false, forwarded: false, task: true },
  'tasks/update': { nameParam: 'taskId', cacheable: false, multiRound: false, forwarded: false, task: true },
  'tasks/cancel': { nameParam: 'taskId', cacheable: false, multiRound: false, forwarded: false, task: true },
};

export function methodSpec(method: string): MethodSpec | undefined {
  return Object.hasOwn(MODERN_METHODS, method) ? MODERN_METHODS[method] : undefined;
}

/**
 * What a request names, as Mcp-Name says it, in either era: the tool or prompt, the resource
 * URI, or the task (the method's nameParam); undefined for a method that names nothing.
 */
export function callName(method: string, params: unknown): string | undefined {
  const param = methodSpec(method)?.nameParam;
  if (param === undefined || typeof params !== 'object' || params === null) return undefined;
  const v = (params as Record<string, unknown>)[param];
  return typeof v === 'string' ? v : undefined;
}

/** Methods a legacy (2024-11-05 .. 2025-11-25) client may send: the bound on legacy method labels. */
export const LEGACY_METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
  'logging/setLevel',
]);
