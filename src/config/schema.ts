// Every setting Causeway has, once: its name (the path in the table), default, doc line and the
// type it parses to. The Config type is read off the table; the file, env and flag loaders and
// --help all go through it, and the README's table is checked against it by a test.

import {
  flag,
  isSetting,
  json,
  list,
  map,
  num,
  oneOf,
  port,
  text,
  type NamedSetting,
  type ValuesOf,
} from './setting.js';
import { AUTH_SETTINGS } from './schema-auth.js';

export { AUTH_ALGORITHMS } from './schema-auth.js';

const CACHE_SCOPES = ['public', 'private'] as const;
export type CacheScope = (typeof CACHE_SCOPES)[number];
export const QUOTA_WINDOWS = ['minute', 'hour', 'day'] as const;

/** One of `quotas.rules`: at most `limit` calls per window, on a mount and for names matching a glob. */
export interface QuotaRule {
  limit: number;
  per: (typeof QUOTA_WINDOWS)[number];
  /** Only calls on this mount path count; absent: every mount. */
  mount?: string;
  /** Only calls whose name (tool, prompt, resource URI) matches this glob count; absent: every name. */
  name?: string;
  /** The methods counted; absent: tools/call. */
  methods?: string[];
}

const TABLE = {
  listen: {
    host: text('127.0.0.1', 'Address the data port binds to.'),
    port: port(8080, 'Data port: HTTP/1.1 and h2c (or TLS with ALPN h2, http/1.1).'),
    path: text('/mcp', 'Path of the MCP endpoint when no mounts are configured.'),
    tlsCertFile: text('', 'PEM certificate; with tlsKeyFile, serve TLS instead of cleartext.'),
    tlsKeyFile: text('', 'PEM private key for listen.tlsCertFile.'),
  },
  admin: {
    host: text('127.0.0.1', 'Address the admin port (/metrics, /healthz, /readyz, /status) binds to.'),
    port: port(
      9464,
      'Admin port, plain HTTP/1.1: /metrics, /healthz, /readyz, /status. 0 picks a free port; -1 disables it.',
      {
        min: -1,
      },
    ),
    token: text(
      '',
      'Bearer token /status, /status.json and /metrics on the admin port ask for (401 without it; ' +
        'Basic with it as password too); /healthz and /readyz stay open. Empty: none asked.',
      { secret: true },
    ),
  },
  limits: {
    maxBodyBytes: num(1_048_576, 'Largest request body accepted (413 above).'),
    maxHeaderBytes: num(16_384, 'Largest request header block accepted (431 above).'),
    bodyTimeoutMs: num(10_000, 'Time allowed to receive a request body (408 after).'),
    maxConcurrentStreams: num(256, 'HTTP/2 streams per connection.'),
    maxInFlight: num(4096, 'Requests handled at once; more get 503.'),
    ratePerSecond: num(
      0,
      'Requests per second each principal may make (a token bucket, shared through Redis with ' +
        'the Redis store); over it, 429 with Retry-After. 0: no limit.',
      { fraction: true },
    ),
    rateBurst: num(
      0,
      "Most requests a principal may make at once, its bucket's " +
        'size; 0: limits.ratePerSecond rounded up (at least 1).',
    ),
    rateMethods: json<{ ratePerSecond: number; burst?: number }>(
      "Per-method buckets besides the principal's own, e.g. " +
        '{"tools/call":{"ratePerSecond":2,"burst":5}} (burst: ratePerSecond rounded up when ' +
        'absent); a request spends both. Legacy requests count by their JSON-RPC method.',
    ),
    headersTimeoutMs: num(
      10_000,
      'Time a connection has to send a complete request head (HTTP/1.1), ' +
        'its first stream (HTTP/2) or finish TLS; closed after.',
      { min: 1 },
    ),
    idleTimeoutMs: num(
      65_000,
      'A keep-alive connection with no request in progress is closed ' +
        'after this long (above common load-balancer idle timeouts).',
      { min: 1 },
    ),
    maxConnections: num(
      10_000,
      'Client connections open at once on one replica; more are ' +
        'closed at once. Keep it below the process descriptor limit.',
      { min: 1 },
    ),
    maxJsonDepth: num(64, 'Deepest nesting of arrays and objects accepted in a request body (400 -32600 beyond).', {
      min: 1,
    }),
    maxJsonItems: num(100_000, 'Most object members plus array elements in one request body (400 -32600 beyond).', {
      min: 1,
    }),
  },
  security: {
    allowedHosts: list(
      [],
      'Host header names accepted (403 otherwise). Empty: ' + 'localhost names when bound to loopback, any otherwise.',
    ),
    allowedOrigins: list(
      [],
      'Origin values accepted when present (403 otherwise). ' + 'Empty: only origins whose host is an allowed host.',
    ),
    credentialHeaders: list(
      [],
      'Client headers treated as credentials besides authorization, proxy-authorization, cookie ' +
        'and x-api-key: sent upstream only when an upstream names them exactly in forwardHeaders.',
    ),
  },
  principal: {
    mode: oneOf(
      ['none', 'header', 'bearer'],
      'none',
      'What tells principals apart, for session pooling and legacy ' +
        'session ownership: nobody, a header, or the bearer token.',
    ),
    header: text('x-causeway-principal', 'Header naming the principal when mode is header.'),
    hashSecret: text(
      '',
      'Key of the HMAC that turns a principal into its stored hash. Required unless both ' +
        'principal.mode and auth.mode are none.',
      { secret: true },
    ),
  },
  auth: AUTH_SETTINGS,
  upstream: {
    name: text('default', 'Name of the upstream in logs and metrics.'),
    url: text(
      '',
      'Endpoint of the legacy server (required unless transport ' +
        'is stdio): Streamable HTTP, or the SSE endpoint for sse.',
    ),
    headers: map('Extra headers sent upstream (e.g. its own credential).', { secret: true }),
    credentials: map(
      'The upstream’s OAuth token (streamable-http), never the client’s: grant (client_credentials: ' +
        'Causeway’s own; token_exchange: an RFC 8693 exchange of the client’s; authorization_code: ' +
        'each user’s own, after signing in), tokenUrl (issuer for authorization_code), clientId, ' +
        'clientSecret, and optional scope, resource, audience. See Authorization.',
      { secret: true },
    ),
    forwardHeaders: list(
      ['traceparent', 'tracestate', 'baggage', 'x-request-id'],
      'Client headers copied upstream on both paths: names, or prefixes ending ' +
        'in *. Credentials pass only when named exactly; hop-by-hop headers never.',
    ),
    taskTools: list(
      [],
      'Tools (names, `*` any run of characters) Causeway itself runs as tasks for ' +
        'clients that declare the tasks extension, where the upstream does not run ' +
        'them as tasks: the call goes on in the background on one replica. See Tasks.',
    ),
    taskSupport: flag(
      true,
      'Where the upstream runs no 2025-11-25 tasks itself, hold as tasks (as upstream.taskTools ' +
        'does) the tools it lists with execution.taskSupport optional or required, for clients ' +
        'that declare the tasks extension; a required one called without the extension is -32021 ' +
        'before it reaches the upstream. Off: only upstream.taskTools. See Tasks.',
    ),
    standingStream: oneOf(
      ['auto', 'always', 'never'],
      'auto',
      'When a pooled session’s GET stream is held while nobody listens (Streamable HTTP; a ' +
        'listen always holds it). auto: one scout session per upstream holds one; a session ' +
        'holds its own once its upstream was seen asking outside a call and its client can be ' +
        'asked, or where the cache keeps a private list on a change’s word. always: every ' +
        'session’s. never: none (asks outside a call are then lost). See Standing streams.',
    ),
    era: oneOf(
      ['auto', 'legacy', 'modern'],
      'auto',
      'Which protocol the server speaks (streamable-http, auto and stdio transports): legacy (initialize and ' +
        'sessions, 2025-11-25 and older), modern (2026-07-28, stateless), or auto: found by one server/discover ' +
        'probe, kept in the store for every replica, and found again when the server refuses the era in use. A ' +
        'modern client is relayed to a modern server as it is; a legacy client gets Causeway’s own legacy face ' +
        'over it. See Both directions.',
    ),
    protocolVersion: text(
      '2025-11-25',
      'Version offered in the upstream initialize; the upstream may negotiate an older one.',
    ),
    connectTimeoutMs: num(5_000, 'Upstream TCP connect timeout.'),
    requestTimeoutMs: num(60_000, 'Longest wait for an upstream answer (504 after).'),
    maxResponseBytes: num(
      16_777_216,
      'Largest upstream response accepted (also the most of a list answer read to ' +
        'filter it for a legacy client); for stdio, the longest line of its stdout.',
    ),
    ejectAfterFailures: num(
      1,
      'Consecutive failures to reach one of an upstream’s URLs before ' +
        'it is ejected (new sessions go elsewhere, its sessions move).',
      { min: 1 },
    ),
    ejectMs: num(10_000, 'How long an ejected upstream URL is left alone before it is tried again.'),
    transport: oneOf(
      ['streamable-http', 'sse', 'stdio', 'auto'],
      'streamable-http',
      'How the legacy server is reached: streamable-http (upstream.url), sse (the 2024-11-05 ' +
        'HTTP+SSE transport; upstream.url is its SSE endpoint), stdio (upstream.command run as ' +
        'a child process per session), auto (Streamable HTTP at upstream.url, else HTTP+SSE ' +
        'there or at /sse beside a /mcp URL; found at the first session). See Upstreams.',
    ),
    command: text('', 'Program run for each upstream session when transport is stdio (required then).'),
    args: list(
      [],
      'Arguments of upstream.command (comma-separated in env and ' +
        'flags; use a config file for arguments containing commas).',
    ),
    env: map(
      'Environment of the stdio child, besides PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, TMPDIR and TZ ' +
        'taken from Causeway’s (nothing else is inherited).',
      { secret: true },
    ),
    cwd: text('', 'Working directory of the stdio child; empty: Causeway’s.'),
    maxProcesses: num(
      100,
      'Most stdio child processes (one per pooled session) per upstream on one replica; ' +
        'the least recently used idle one is stopped for a new one, 503 when none is idle.',
      { min: 1 },
    ),
    stdioPool: num(
      1,
      'Most stdio child processes per upstream on one replica serving a 2026-07-28 child ' +
        '(stateless: shared by every principal); a lost one is restarted with backoff.',
      { min: 1 },
    ),
  },
  /** Named upstreams (see topology.ts); empty: the one described by upstream.*. */
  upstreams: json<Record<string, unknown>>(
    'Several upstreams by name, e.g. ' +
      '{"search":{"urls":["http://s1/mcp","http://s2/mcp"],"headers":{...}}}; ' +
      'upstream.* give their defaults. See Routing.',
  ),
  /** Mount path -> what it serves; empty: the one upstream at listen.path. */
  mounts: json<Record<string, unknown>>(
    'Path -> {"upstreams":[...],"prefix","pageSize","routes","skills","tools","prompts","resources"}; several ' +
      'upstreams on one path are federated; tools, prompts, resources make it a virtual server (see Virtual ' +
      'servers). Empty: the one upstream at listen.path.',
  ),
  quotas: {
    rules: json<QuotaRule>(
      'Quotas per tenant by name, e.g. {"calls":{"limit":1000,"per":"hour"},"images":{"limit":10,"per":"day",' +
        '"mount":"/mcp","name":"*image*"}}; per: minute, hour or day; methods counted: tools/call unless ' +
        '"methods" lists others. Shared through Redis with the Redis store. See Quotas.',
    ),
    tenantClaim: text(
      'tenant',
      "The access token's claim naming a call's tenant (tenant, azp, client_id...); without it, or " +
        'without auth, the tenant is the principal.',
    ),
  },
  cache: {
    ttlMs: num(0, 'ttlMs put on cacheable results (discover, lists, resources/read).'),
    scope: oneOf(
      CACHE_SCOPES,
      'private',
      'cacheScope on cacheable results; public only when the upstream answers the same to every principal.',
    ),
    methods: json<{ ttlMs?: number; scope?: CacheScope }>(
      'Per-method overrides, e.g. {"tools/list":{"ttlMs":60000,"scope":"public"}}.',
    ),
    maxBytes: num(
      33_554_432,
      'Bytes of answers the gateway cache keeps in memory on each replica, least ' +
        'recently used evicted first; 0 turns the gateway cache off. See Caching.',
    ),
    store: oneOf(
      ['memory', 'redis'],
      'memory',
      'Where public entries are kept: memory (each replica its own), or ' +
        'redis too (store.kind=redis), so any replica serves what one read.',
    ),
    keepMs: num(
      300_000,
      "How long the gateway keeps a legacy upstream's answer when a change notification " +
        'would drop it sooner (the upstream declared listChanged and Causeway holds its ' +
        "stream), at most store.idleTtlMs; otherwise it keeps it for the answer's ttlMs.",
    ),
  },
  skills: {
    dir: text(
      '',
      "Folder of Agent Skills served beside the upstream's tools (one subfolder per skill, each with its " +
        'SKILL.md), watched for changes; empty: none. With mounts, each mount names its own. See Skills.',
    ),
    prefix: text(
      '',
      'URI prefix of the served skills: skill://<prefix>/<name>/SKILL.md; empty: skill://<name>/SKILL.md.',
    ),
  },
  store: {
    kind: oneOf(['memory', 'redis'], 'memory', 'Where pooled upstream sessions are recorded.'),
    idleTtlMs: num(900_000, 'An upstream session unused this long is closed.'),
    maxSessions: num(10_000, 'Most pooled upstream sessions; the least recently used goes first.'),
    keyPrefix: text(
      'causeway:',
      'Prefix of every Redis key Causeway writes (no braces); ' +
        'deployments sharing one Redis need different prefixes.',
    ),
    redisUrl: text(
      'redis://127.0.0.1:6379',
      'Redis when store.kind is redis: redis://[user:password@]host:port[/db], rediss:// ' +
        'for TLS. With Sentinel or Cluster only its scheme, credentials and db are used.',
      { secret: true },
    ),
    redisUsername: text('', 'Redis ACL user; overrides the one in store.redisUrl.'),
    redisPassword: text('', 'Redis password; overrides the one in store.redisUrl (prefer the env var).', {
      secret: true,
    }),
    redisTlsCaFile: text('', 'PEM CA bundle trusted for rediss:// (default: the system CAs).'),
    redisSentinels: list([], 'Sentinel host:port list; when set, the Redis master is found through Sentinel.'),
    redisSentinelName: text('mymaster', 'Master name the Sentinels watch.'),
    redisSentinelPassword: text('', 'Password of the Sentinels themselves, if they require one.', { secret: true }),
    redisCluster: list([], 'Redis Cluster seed nodes as host:port; when set, Causeway talks Cluster protocol.'),
    redisCommandTimeoutMs: num(
      500,
      'Longest wait for one Redis command; past it the request carries on with a replica-local session.',
    ),
  },
  mrtr: {
    stateKeys: list(
      [],
      'AES-256-GCM keys (base64, 32 bytes, e.g. from `openssl rand -base64 32`) sealing requestState, newest first; ' +
        'every replica needs the same list, so it is required with store.kind=redis. Empty (memory store only): ' +
        'a random key per process.',
      { secret: true },
    ),
    stateTtlMs: num(
      300_000,
      'How long an input_required round may wait for its retry before the upstream call is cancelled.',
    ),
    collectWindowMs: num(20, 'Asks arriving this close together go into one input_required round.'),
    maxPending: num(10_000, 'Most upstream calls held open between rounds on one replica.'),
    maxPendingPerPrincipal: num(100, 'Most held calls per principal on one replica.'),
  },
  tasks: {
    ttlMs: num(
      3_600_000,
      'The life Causeway asks an upstream to give a task it runs for a client ' +
        '(tasks extension); tasks/get finds the task for at least that long.',
      { min: 1 },
    ),
    maxFollowed: num(10_000, 'Most tasks one replica follows on their upstream at once (503 for a new task beyond).'),
    maxFollowedPerPrincipal: num(100, 'Most tasks one replica follows at once per principal (503 beyond).'),
    heartbeatMs: num(
      5_000,
      'How often the replica holding a call run as a task (upstream.taskTools, upstream.taskSupport) ' +
        'says it is alive; after four times this without a word the task has failed with it.',
      { min: 1 },
    ),
    firstAskMs: num(
      1_000,
      'How long a call held as a task for its taskSupport (upstream.taskSupport) waits for a first question ' +
        'before answering the task: questions a `required` tool asks before this passes, or before it reports ' +
        'progress, come as input_required rounds first, and the task after (an `optional` tool’s first question ' +
        'makes the task); later ones are the task’s inputRequests. 0: the task at once.',
    ),
  },
  subscriptions: {
    maxListeners: num(10_000, 'Most subscriptions/listen streams open at once on one replica (503 beyond).'),
    maxPerPrincipal: num(100, 'Most listen streams open at once per principal on one replica (503 beyond).'),
    keepAliveMs: num(
      15_000,
      'Interval of the `:` keep-alive comments on listen streams, and on legacy ' +
        "clients' SSE streams of a stdio or HTTP+SSE upstream; 0 sends none.",
    ),
    maxUrisPerListen: num(100, 'Most resourceSubscriptions URIs one listen request may name (-32602 beyond).'),
    takeoverMs: num(
      3_000,
      'With store.kind=redis: a replica not heard of for this long has lapsed (each ' +
        'states itself three times as often, one Redis script per replica), and the GET ' +
        'streams it held are taken over by replicas with the session in their pools.',
      { min: 1 },
    ),
  },
  log: {
    level: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info', 'pino log level.'),
    accessSample: num(
      0,
      'Share of MCP requests logged at info when they end, one line each (era, method, ' +
        'name, status, duration, request id): 0 logs none, 1 every one, 0.01 one in a hundred.',
      { max: 1, fraction: true },
    ),
    audit: flag(
      false,
      'One info line (msg "audit") for every tools/call, prompts/get and resources/read of either era, ' +
        'whatever log.accessSample says: who (iss, sub, client_id or the principal label), mount, upstream, era, ' +
        'name, outcome, duration, request and trace ids. Never a token or the arguments.',
    ),
  },
  drain: {
    delayMs: num(
      5_000,
      'On SIGTERM, /readyz answers 503 at once but Causeway accepts and serves as usual ' +
        'this long, so load balancers stop sending to it before its listener closes.',
    ),
    timeoutMs: num(
      10_000,
      'After drain.delayMs, longest wait for the requests in flight; then ' +
        'every connection is closed and held multi-round calls are cancelled.',
    ),
  },
};

export type Config = ValuesOf<typeof TABLE>;
export type PrincipalMode = Config['principal']['mode'];
/** upstream.standingStream: when a pooled session's GET stream is held while nobody listens. */
export type StandingStream = Config['upstream']['standingStream'];

/** The upstream.* settings: the one upstream when no `upstreams` are named, else their defaults. */
export const UPSTREAM_SETTINGS = TABLE.upstream;

/** Every setting with its path, in the table's order. */
export const SETTINGS: readonly NamedSetting[] = Object.entries(TABLE).flatMap(([name, entry]) =>
  isSetting(entry)
    ? [{ path: name, ...entry }]
    : Object.entries(entry).map(([key, s]) => ({ path: `${name}.${key}`, ...s })),
);
