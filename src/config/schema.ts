import { STANDING_STREAMS, type StandingStream } from '../upstream/index.js';

// The Config type, its defaults and one doc line per key. Every setting Causeway has is a row
// of SETTINGS; the file, env and flag loaders all go through it, and the README's table is
// checked against it by a test.

export type CacheScope = 'public' | 'private';
export type PrincipalMode = 'none' | 'header' | 'bearer';
export type StoreKind = 'memory' | 'redis';
export type AuthMode = 'none' | 'jwt' | 'introspection';
/** Asymmetric JWS algorithms only: never `none`, never an HMAC keyed by what a public key would be. */
export const AUTH_ALGORITHMS: readonly string[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
export type UpstreamTransport = 'streamable-http' | 'sse' | 'stdio' | 'auto';
export const UPSTREAM_TRANSPORTS: readonly UpstreamTransport[] = ['streamable-http', 'sse', 'stdio', 'auto'];


export interface Config {
  listen: { host: string; port: number; path: string; tlsCertFile: string; tlsKeyFile: string };
  admin: { host: string; port: number };
  limits: {
    maxBodyBytes: number;
    maxHeaderBytes: number;
    bodyTimeoutMs: number;
    maxConcurrentStreams: number;
    maxInFlight: number;
    headersTimeoutMs: number;
    idleTimeoutMs: number;
    maxConnections: number;
    maxJsonDepth: number;
    maxJsonItems: number;
    ratePerSecond: number;
    rateBurst: number;
    rateMethods: Record<string, { ratePerSecond: number; burst?: number }>;
  };
  security: { allowedHosts: string[]; allowedOrigins: string[]; credentialHeaders: string[] };
  principal: { mode: PrincipalMode; header: string; hashSecret: string };
  auth: {
    mode: AuthMode;
    issuer: string;
    jwksUrl: string;
    moreIssuers: Record<string, string>;
    jwksCooldownMs: number;
    resource: string;
    authorizationServers: string[];
    algorithms: string[];
    clockSkewMs: number;
    dpop: 'allowed' | 'required' | 'off';
    dpopAlgorithms: string[];
    dpopProofWindowMs: number;
    publicDiscover: boolean;
    dpopNonces: boolean;
    callbackUrl: string;
    clientMetadataUrl: string;
    introspectionUrl: string;
    introspectionClientId: string;
    introspectionClientSecret: string;
    introspectionCacheMs: number;
    introspectionCacheSize: number;
    /** `method` or `method name-pattern` -> the scopes it requires (see auth/rules.ts). */
    rules: Record<string, unknown>;
  };
  upstream: {
    name: string;
    url: string;
    headers: Record<string, string>;
    credentials: Record<string, string>;
    forwardHeaders: string[];
    taskTools: string[];
    standingStream: StandingStream;
    protocolVersion: string;
    connectTimeoutMs: number;
    requestTimeoutMs: number;
    maxResponseBytes: number;
    ejectAfterFailures: number;
    ejectMs: number;
    transport: UpstreamTransport;
    command: string;
    args: string[];
    env: Record<string, string>;
    cwd: string;
    maxProcesses: number;
  };
  /** Named upstreams (see config/topology.ts); empty: the one described by upstream.*. */
  upstreams: Record<string, Record<string, unknown>>;
  /** Mount path -> what it serves; empty: the one upstream at listen.path. */
  mounts: Record<string, Record<string, unknown>>;
  cache: { ttlMs: number; scope: CacheScope; methods: Record<string, { ttlMs?: number; scope?: CacheScope }> };
  store: {
    kind: StoreKind;
    idleTtlMs: number;
    maxSessions: number;
    keyPrefix: string;
    redisUrl: string;
    redisUsername: string;
    redisPassword: string;
    redisTlsCaFile: string;
    redisSentinels: string[];
    redisSentinelName: string;
    redisSentinelPassword: string;
    redisCluster: string[];
    redisCommandTimeoutMs: number;
  };
  mrtr: {
    stateKeys: string[];
    stateTtlMs: number;
    collectWindowMs: number;
    maxPending: number;
    maxPendingPerPrincipal: number;
  };
  tasks: {
    ttlMs: number;
    maxFollowed: number;
    maxFollowedPerPrincipal: number;
    heartbeatMs: number;
  };
  subscriptions: {
    maxListeners: number;
    maxPerPrincipal: number;
    keepAliveMs: number;
    maxUrisPerListen: number;
    takeoverMs: number;
  };
  log: { level: string; accessSample: number };
  drain: { delayMs: number; timeoutMs: number };
}

type Kind = 'string' | 'number' | 'boolean' | 'list' | 'map' | 'json';

export interface Setting {
  path: string;
  kind: Kind;
  default: unknown;
  doc: string;
  choices?: readonly string[];
  /** Smallest number accepted (numbers only); 0 unless given. */
  min?: number;
}

export const SETTINGS: readonly Setting[] = [
  { path: 'listen.host', kind: 'string', default: '127.0.0.1', doc: 'Address the data port binds to.' },
  { path: 'listen.port', kind: 'number', default: 8080, doc: 'Data port: HTTP/1.1 and h2c (or TLS with ALPN h2, http/1.1).' },
  { path: 'listen.path', kind: 'string', default: '/mcp', doc: 'Path of the MCP endpoint when no mounts are configured.' },
  { path: 'listen.tlsCertFile', kind: 'string', default: '', doc: 'PEM certificate; with tlsKeyFile, serve TLS instead of cleartext.' },
  { path: 'listen.tlsKeyFile', kind: 'string', default: '', doc: 'PEM private key for listen.tlsCertFile.' },
  { path: 'admin.host', kind: 'string', default: '127.0.0.1', doc: 'Address the admin port (/metrics, /healthz, /readyz) binds to.' },
  {
    path: 'admin.port',
    kind: 'number',
    default: 9464,
    min: -1,
    doc: 'Admin port, plain HTTP/1.1: /metrics, /healthz, /readyz. 0 picks a free port; -1 disables it.',
  },
  { path: 'limits.maxBodyBytes', kind: 'number', default: 1_048_576, doc: 'Largest request body accepted (413 above).' },
  { path: 'limits.maxHeaderBytes', kind: 'number', default: 16_384, doc: 'Largest request header block accepted (431 above).' },
  { path: 'limits.bodyTimeoutMs', kind: 'number', default: 10_000, doc: 'Time allowed to receive a request body (408 after).' },
  { path: 'limits.maxConcurrentStreams', kind: 'number', default: 256, doc: 'HTTP/2 streams per connection.' },
  { path: 'limits.maxInFlight', kind: 'number', default: 4096, doc: 'Requests handled at once; more get 503.' },
  {
    path: 'limits.ratePerSecond',
    kind: 'number',
    default: 0,
    min: 0,
    doc: 'Requests per second each principal may make (a token bucket, shared through Redis with the Redis store); over it, 429 with Retry-After. 0: no limit.',
  },
  { path: 'limits.rateBurst', kind: 'number', default: 0, min: 0, doc: "Most requests a principal may make at once, its bucket's size; 0: limits.ratePerSecond rounded up (at least 1)." },
  {
    path: 'limits.rateMethods',
    kind: 'json',
    default: {},
    doc: 'Per-method buckets besides the principal\'s own, e.g. {"tools/call":{"ratePerSecond":2,"burst":5}} (burst: ratePerSecond rounded up when absent); a request spends both. Legacy requests count by their JSON-RPC method.',
  },
  {
    path: 'limits.headersTimeoutMs',
    kind: 'number',
    default: 10_000,
    min: 1,
    doc: 'Time a connection has to send a complete request head (HTTP/1.1), its first stream (HTTP/2) or finish TLS; closed after.',
  },
  {
    path: 'limits.idleTimeoutMs',
    kind: 'number',
    default: 65_000,
    min: 1,
    doc: 'A keep-alive connection with no request in progress is closed after this long (above common load-balancer idle timeouts).',
  },
  {
    path: 'limits.maxConnections',
    kind: 'number',
    default: 10_000,
    min: 1,
    doc: 'Client connections open at once on one replica; more are closed at once. Keep it below the process descriptor limit.',
  },
  { path: 'limits.maxJsonDepth', kind: 'number', default: 64, min: 1, doc: 'Deepest nesting of arrays and objects accepted in a request body (400 -32600 beyond).' },
  {
    path: 'limits.maxJsonItems',
    kind: 'number',
    default: 100_000,
    min: 1,
    doc: 'Most object members plus array elements in one request body (400 -32600 beyond).',
  },
  {
    path: 'security.allowedHosts',
    kind: 'list',
    default: [],
    doc: 'Host header names accepted (403 otherwise). Empty: localhost names when bound to loopback, any otherwise.',
  },
  {
    path: 'security.allowedOrigins',
    kind: 'list',
    default: [],
    doc: 'Origin values accepted when present (403 otherwise). Empty: only origins whose host is an allowed host.',
  },
  {
    path: 'security.credentialHeaders',
    kind: 'list',
    default: [],
    doc: 'Client headers treated as credentials besides authorization, proxy-authorization, cookie and x-api-key: sent upstream only when an upstream names them exactly in forwardHeaders.',
  },
  {
    path: 'principal.mode',
    kind: 'string',
    default: 'none',
    choices: ['none', 'header', 'bearer'],
    doc: 'What tells principals apart, for session pooling and legacy session ownership: nobody, a header, or the bearer token.',
  },
  { path: 'principal.header', kind: 'string', default: 'x-causeway-principal', doc: 'Header naming the principal when mode is header.' },
  {
    path: 'principal.hashSecret',
    kind: 'string',
    default: '',
    doc: 'Key of the HMAC that turns a principal into its stored hash. Required unless both principal.mode and auth.mode are none.',
  },
  {
    path: 'auth.mode',
    kind: 'string',
    default: 'none',
    choices: ['none', 'jwt', 'introspection'],
    doc: 'OAuth 2.1 resource server on every MCP request: none (no check), jwt (signed access tokens checked against auth.jwksUrl) or introspection (RFC 7662 at auth.introspectionUrl). See Authorization.',
  },
  { path: 'auth.issuer', kind: 'string', default: '', doc: 'Issuer (iss) a token must carry, exactly; required unless auth.mode is none.' },
  { path: 'auth.jwksUrl', kind: 'string', default: '', doc: "The issuer's JWKS URL (jwt mode): fetched, cached, fetched again for an unknown kid at most once per auth.jwksCooldownMs." },
  { path: 'auth.jwksCooldownMs', kind: 'number', default: 30_000, doc: 'Least time between two JWKS fetches caused by unknown kid values.' },
  {
    path: 'auth.resource',
    kind: 'string',
    default: '',
    doc: "Public canonical URL of the MCP endpoint: the audience a token must carry (RFC 8707) and the metadata's resource. With several mounts, each mount's is this URL's origin plus the mount path.",
  },
  {
    path: 'auth.moreIssuers',
    kind: 'map',
    default: {},
    doc: 'Further issuers whose JWTs are accepted beside auth.issuer (jwt mode): issuer -> its JWKS URL. A token is checked against the keys of the issuer it names; principals of different issuers never meet.',
  },
  { path: 'auth.authorizationServers', kind: 'list', default: [], doc: 'authorization_servers of the Protected Resource Metadata; empty: auth.issuer and auth.moreIssuers.' },
  { path: 'auth.algorithms', kind: 'list', default: ['RS256', 'PS256', 'ES256', 'EdDSA'], doc: `JWS algorithms accepted on access tokens, among ${AUTH_ALGORITHMS.join(', ')}.` },
  {
    path: 'auth.dpop',
    kind: 'string',
    default: 'allowed',
    choices: ['allowed', 'required', 'off'],
    doc: 'DPoP (RFC 9449) sender-constrained tokens: allowed (Bearer or DPoP; a key-bound token only with its proof), required (DPoP only) or off (Bearer only). See Authorization.',
  },
  { path: 'auth.dpopAlgorithms', kind: 'list', default: ['ES256', 'RS256', 'PS256', 'EdDSA'], doc: `JWS algorithms accepted on DPoP proofs, among ${AUTH_ALGORITHMS.join(', ')}.` },
  { path: 'auth.dpopProofWindowMs', kind: 'number', default: 300_000, min: 1000, doc: "How old a DPoP proof's iat may be (plus auth.clockSkewMs); each proof's jti is remembered this long, shared through Redis with the Redis store." },
  {
    path: 'auth.dpopNonces',
    kind: 'boolean',
    default: false,
    doc: 'Require a server nonce in every DPoP proof (RFC 9449 §9): a proof without a current one gets 401 use_dpop_nonce with DPoP-Nonce, and DPoP answers carry the next; each nonce lives auth.dpopProofWindowMs, every replica takes every replica\'s.',
  },
  {
    path: 'auth.publicDiscover',
    kind: 'boolean',
    default: false,
    doc: 'Answer server/discover without an access token (every other request still needs one). Off: discover gets the 401 challenge like any method.',
  },
  {
    path: 'auth.callbackUrl',
    kind: 'string',
    default: '',
    doc: "Causeway's OAuth callback as users' browsers reach it (e.g. https://mcp.example.com/oauth/callback): the redirect_uri of upstreams whose credentials grant is authorization_code; Causeway serves its path.",
  },
  {
    path: 'auth.clientMetadataUrl',
    kind: 'string',
    default: '',
    doc: "Causeway's Client ID Metadata Document, an https URL with a path that Causeway serves: its client id at upstream authorization servers that accept such documents, for authorization_code upstreams without a clientId (else it registers, RFC 7591).",
  },
  { path: 'auth.clockSkewMs', kind: 'number', default: 30_000, doc: 'Clock difference tolerated on exp, nbf and iat.' },
  { path: 'auth.introspectionUrl', kind: 'string', default: '', doc: 'RFC 7662 introspection endpoint (introspection mode).' },
  { path: 'auth.introspectionClientId', kind: 'string', default: '', doc: "Causeway's client id at the introspection endpoint (HTTP Basic)." },
  {
    path: 'auth.introspectionClientSecret',
    kind: 'string',
    default: '',
    doc: 'Its client secret (prefer the env var); never logged.',
  },
  { path: 'auth.introspectionCacheMs', kind: 'number', default: 60_000, doc: 'Longest time an active introspection answer is reused (never past the token exp); inactive ones are reused 5 s at most.' },
  { path: 'auth.introspectionCacheSize', kind: 'number', default: 10_000, min: 1, doc: 'Most introspection answers kept, by a hash of the token; the oldest goes first.' },
  {
    path: 'auth.rules',
    kind: 'json',
    default: {},
    doc: 'Scopes required, e.g. {"*":["mcp"],"tools/call admin_*":["mcp:admin"]}: every rule whose method (or *) and name pattern match applies; lists show only what may be called.',
  },
  { path: 'upstream.name', kind: 'string', default: 'default', doc: 'Name of the upstream in logs and metrics.' },
  { path: 'upstream.url', kind: 'string', default: '', doc: 'Endpoint of the legacy server (required unless transport is stdio): Streamable HTTP, or the SSE endpoint for sse.' },
  { path: 'upstream.headers', kind: 'map', default: {}, doc: 'Extra headers sent upstream (e.g. its own credential).' },
  {
    path: 'upstream.credentials',
    kind: 'map',
    default: {},
    doc: 'The upstream’s OAuth token (streamable-http), never the client’s: grant (client_credentials: Causeway’s own; token_exchange: an RFC 8693 exchange of the client’s; authorization_code: each user’s own, after signing in), tokenUrl (issuer for authorization_code), clientId, clientSecret, and optional scope, resource, audience. See Authorization.',
  },
  {
    path: 'upstream.forwardHeaders',
    kind: 'list',
    default: ['traceparent', 'tracestate', 'baggage', 'x-request-id'],
    doc: 'Client headers copied upstream on both paths: names, or prefixes ending in *. Credentials pass only when named exactly; hop-by-hop headers never.',
  },
  {
    path: 'upstream.taskTools',
    kind: 'list',
    default: [],
    doc: 'Tools (names, `*` any run of characters) Causeway itself runs as tasks for clients that declare the tasks extension, where the upstream does not run them as tasks: the call goes on in the background on one replica. See Tasks.',
  },
  {
    path: 'upstream.standingStream',
    kind: 'string',
    default: 'auto',
    choices: STANDING_STREAMS,
    doc: 'When a pooled session’s GET stream is held while nobody listens, so the upstream can ask outside a call (Streamable HTTP only; a subscriptions/listen always holds it): auto, for sessions whose clients declared roots, sampling or elicitation; always; never (such asks are then lost). Each held stream costs one upstream connection and about 20 KB on one replica. See Sharing sessions through Redis.',
  },
  {
    path: 'upstream.protocolVersion',
    kind: 'string',
    default: '2025-11-25',
    doc: 'Version offered in the upstream initialize; the upstream may negotiate an older one.',
  },
  { path: 'upstream.connectTimeoutMs', kind: 'number', default: 5_000, doc: 'Upstream TCP connect timeout.' },
  { path: 'upstream.requestTimeoutMs', kind: 'number', default: 60_000, doc: 'Longest wait for an upstream answer (504 after).' },
  { path: 'upstream.maxResponseBytes', kind: 'number', default: 16_777_216, doc: 'Largest upstream response accepted (also the most of a list answer read to filter it for a legacy client); for stdio, the longest line of its stdout.' },
  {
    path: 'upstream.ejectAfterFailures',
    kind: 'number',
    default: 1,
    min: 1,
    doc: 'Consecutive failures to reach one of an upstream’s URLs before it is ejected (new sessions go elsewhere, its sessions move).',
  },
  { path: 'upstream.ejectMs', kind: 'number', default: 10_000, doc: 'How long an ejected upstream URL is left alone before it is tried again.' },
  {
    path: 'upstream.transport',
    kind: 'string',
    default: 'streamable-http',
    choices: UPSTREAM_TRANSPORTS,
    doc: 'How the legacy server is reached: streamable-http (upstream.url), sse (the 2024-11-05 HTTP+SSE transport; upstream.url is its SSE endpoint), stdio (upstream.command run as a child process per session), auto (Streamable HTTP at upstream.url, else HTTP+SSE there or at /sse beside a /mcp URL; found at the first session). See Upstreams.',
  },
  { path: 'upstream.command', kind: 'string', default: '', doc: 'Program run for each upstream session when transport is stdio (required then).' },
  { path: 'upstream.args', kind: 'list', default: [], doc: 'Arguments of upstream.command (comma-separated in env and flags; use a config file for arguments containing commas).' },
  {
    path: 'upstream.env',
    kind: 'map',
    default: {},
    doc: 'Environment of the stdio child, besides PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, TMPDIR and TZ taken from Causeway’s (nothing else is inherited).',
  },
  { path: 'upstream.cwd', kind: 'string', default: '', doc: 'Working directory of the stdio child; empty: Causeway’s.' },
  {
    path: 'upstream.maxProcesses',
    kind: 'number',
    default: 100,
    min: 1,
    doc: 'Most stdio child processes (one per pooled session) per upstream on one replica; the least recently used idle one is stopped for a new one, 503 when none is idle.',
  },
  {
    path: 'upstreams',
    kind: 'json',
    default: {},
    doc: 'Several upstreams by name, e.g. {"search":{"urls":["http://s1/mcp","http://s2/mcp"],"headers":{...}}}; upstream.* give their defaults. See Routing.',
  },
  {
    path: 'mounts',
    kind: 'json',
    default: {},
    doc: 'Path -> {"upstreams":[...],"prefix","pageSize","routes"}; several upstreams on one path are federated. Empty: the one upstream at listen.path.',
  },
  { path: 'cache.ttlMs', kind: 'number', default: 0, doc: 'ttlMs put on cacheable results (discover, lists, resources/read).' },
  {
    path: 'cache.scope',
    kind: 'string',
    default: 'private',
    choices: ['public', 'private'],
    doc: 'cacheScope on cacheable results; public only when the upstream answers the same to every principal.',
  },
  {
    path: 'cache.methods',
    kind: 'json',
    default: {},
    doc: 'Per-method overrides, e.g. {"tools/list":{"ttlMs":60000,"scope":"public"}}.',
  },
  {
    path: 'store.kind',
    kind: 'string',
    default: 'memory',
    choices: ['memory', 'redis'],
    doc: 'Where pooled upstream sessions are recorded.',
  },
  { path: 'store.idleTtlMs', kind: 'number', default: 900_000, doc: 'An upstream session unused this long is closed.' },
  { path: 'store.maxSessions', kind: 'number', default: 10_000, doc: 'Most pooled upstream sessions; the least recently used goes first.' },
  {
    path: 'store.keyPrefix',
    kind: 'string',
    default: 'causeway:',
    doc: 'Prefix of every Redis key Causeway writes (no braces); deployments sharing one Redis need different prefixes.',
  },
  {
    path: 'store.redisUrl',
    kind: 'string',
    default: 'redis://127.0.0.1:6379',
    doc: 'Redis when store.kind is redis: redis://[user:password@]host:port[/db], rediss:// for TLS. With Sentinel or Cluster only its scheme, credentials and db are used.',
  },
  { path: 'store.redisUsername', kind: 'string', default: '', doc: 'Redis ACL user; overrides the one in store.redisUrl.' },
  { path: 'store.redisPassword', kind: 'string', default: '', doc: 'Redis password; overrides the one in store.redisUrl (prefer the env var).' },
  { path: 'store.redisTlsCaFile', kind: 'string', default: '', doc: 'PEM CA bundle trusted for rediss:// (default: the system CAs).' },
  {
    path: 'store.redisSentinels',
    kind: 'list',
    default: [],
    doc: 'Sentinel host:port list; when set, the Redis master is found through Sentinel.',
  },
  { path: 'store.redisSentinelName', kind: 'string', default: 'mymaster', doc: 'Master name the Sentinels watch.' },
  { path: 'store.redisSentinelPassword', kind: 'string', default: '', doc: 'Password of the Sentinels themselves, if they require one.' },
  {
    path: 'store.redisCluster',
    kind: 'list',
    default: [],
    doc: 'Redis Cluster seed nodes as host:port; when set, Causeway talks Cluster protocol.',
  },
  {
    path: 'store.redisCommandTimeoutMs',
    kind: 'number',
    default: 500,
    doc: 'Longest wait for one Redis command; past it the request carries on with a replica-local session.',
  },
  {
    path: 'mrtr.stateKeys',
    kind: 'list',
    default: [],
    doc: 'AES-256-GCM keys (base64, 32 bytes) sealing requestState, newest first; every replica needs the same list. Empty: a random key per process.',
  },
  { path: 'mrtr.stateTtlMs', kind: 'number', default: 300_000, doc: 'How long an input_required round may wait for its retry before the upstream call is cancelled.' },
  { path: 'mrtr.collectWindowMs', kind: 'number', default: 20, doc: 'Asks arriving this close together go into one input_required round.' },
  { path: 'mrtr.maxPending', kind: 'number', default: 10_000, doc: 'Most upstream calls held open between rounds on one replica.' },
  { path: 'mrtr.maxPendingPerPrincipal', kind: 'number', default: 100, doc: 'Most held calls per principal on one replica.' },
  { path: 'tasks.ttlMs', kind: 'number', default: 3_600_000, min: 1, doc: 'The life Causeway asks an upstream to give a task it runs for a client (tasks extension); tasks/get finds the task for at least that long.' },
  { path: 'tasks.maxFollowed', kind: 'number', default: 10_000, doc: 'Most tasks one replica follows on their upstream at once (503 for a new task beyond).' },
  { path: 'tasks.maxFollowedPerPrincipal', kind: 'number', default: 100, doc: 'Most tasks one replica follows at once per principal (503 beyond).' },
  { path: 'tasks.heartbeatMs', kind: 'number', default: 5_000, min: 1, doc: 'How often the replica holding a call run as a task (upstream.taskTools) says it is alive; after four times this without a word the task has failed with it.' },
  { path: 'subscriptions.maxListeners', kind: 'number', default: 10_000, doc: 'Most subscriptions/listen streams open at once on one replica (503 beyond).' },
  { path: 'subscriptions.maxPerPrincipal', kind: 'number', default: 100, doc: 'Most listen streams open at once per principal on one replica (503 beyond).' },
  { path: 'subscriptions.keepAliveMs', kind: 'number', default: 15_000, doc: "Interval of the `:` keep-alive comments on listen streams, and on legacy clients' SSE streams of a stdio or HTTP+SSE upstream; 0 sends none." },
  { path: 'subscriptions.maxUrisPerListen', kind: 'number', default: 100, doc: 'Most resourceSubscriptions URIs one listen request may name (-32602 beyond).' },
  {
    path: 'subscriptions.takeoverMs',
    kind: 'number',
    default: 3_000,
    min: 1,
    doc: 'With store.kind=redis: a replica not heard of for this long has lapsed (each states itself three times as often, one Redis script per replica), and the GET streams it held are taken over by replicas with the session in their pools.',
  },
  {
    path: 'log.level',
    kind: 'string',
    default: 'info',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    doc: 'pino log level.',
  },
  {
    path: 'log.accessSample',
    kind: 'number',
    default: 0,
    doc: 'Share of MCP requests logged at info when they end, one line each (era, method, name, status, duration, request id): 0 logs none, 1 every one, 0.01 one in a hundred.',
  },
  {
    path: 'drain.delayMs',
    kind: 'number',
    default: 5_000,
    doc: 'On SIGTERM, /readyz answers 503 at once but Causeway accepts and serves as usual this long, so load balancers stop sending to it before its listener closes.',
  },
  {
    path: 'drain.timeoutMs',
    kind: 'number',
    default: 10_000,
    doc: 'After drain.delayMs, longest wait for the requests in flight; then every connection is closed and held multi-round calls are cancelled.',
  },
];
