// Each upstream's parts, built from its spec: the client for its transport (Streamable HTTP, a
// stdio child or HTTP+SSE connection per session, or auto), the face legacy clients get, its
// forward policy and metrics. An HTTP upstream has one HTTP client (upstream/http/compose/) that
// its session client, its passthrough, its HTTP+SSE channels and its transport probe share; the
// parts close it once both are done with it. Part of the composition root: app.ts calls it once
// per upstream.

import type { CachePolicy, Config, UpstreamSpec } from './config/index.js';
import type { CacheHint } from './dialect/index.js';
import type { Logger } from './log.js';
import { UpstreamCache, type GatewayCache } from './cache/index.js';
import { UpstreamMetrics, type Metrics } from './metrics/index.js';
import { AutoLegacyFace, ChannelLegacyFace, EraLegacyFace, LegacyPassthrough, SessionBinding, type LegacyFace } from './passthrough/index.js';
import { TranslatedFace, type AskRounds, type FactsStore } from './translate/index.js';
import type { ModernSide } from './routing/index.js';
import { VERSION } from './version.js';
import {
  AutoClient,
  ChannelClient,
  DEFAULT_CREDENTIAL_HEADERS,
  ForwardPolicy,
  OutsideAsks,
  SseChannelOpener,
  StandingStreams,
  StdioOpener,
  TargetSet,
  UpstreamClient,
  UpstreamCredentials,
  ModernClient,
  ModernStdioPool,
  httpWire,
  type ModernWire,
  RelayedListens,
  UpstreamDispatcher,
  UpstreamEra,
  UpstreamHttp,
  type Era,
  type EraMemo,
  type EraSetting,
  type ProbeAnswer,
  UpstreamSignIn,
  type GrantStore,
  type Sealer,
  type SubjectSource,
  type UpstreamAuthorization,
  type ReplicaAsks,
  type TransportMemo,
  type UpstreamSessionClient,
} from './upstream/index.js';

export interface UpstreamParts {
  spec: UpstreamSpec;
  client: UpstreamSessionClient;
  /** What serves legacy clients: the byte passthrough, or for a stdio or HTTP+SSE upstream Causeway's own legacy face. */
  passthrough: LegacyFace;
  forward: ForwardPolicy;
  metrics: UpstreamMetrics;
  /** The users' sign-in at this upstream, when it wants their own token (grant authorization_code). */
  signIn?: UpstreamSignIn;
  /** Closes the client and the passthrough, letting their requests finish, then the HTTP client they share. */
  close(): Promise<void>;
  /** A Streamable HTTP upstream may speak 2026-07-28: its era, and the client of its modern side. */
  modern?: ModernSide;
  /** The gateway cache of this upstream's discover, lists and reads (cache.maxBytes > 0). */
  cache?: UpstreamCache;
  /** A Streamable HTTP upstream's own session client, for the calls the warm lane sends through it. */
  direct?: UpstreamClient;
}

/** What the app shares among its upstreams. */
export interface Shared {
  /** Makes a replica's own stdio or HTTP+SSE client reach sessions on other replicas too. */
  reachable(name: string, client: UpstreamSessionClient): UpstreamSessionClient;
  transports: TransportMemo;
  /** The clients' tokens, for upstreams whose credential is an exchange of them. */
  subjects: SubjectSource | undefined;
  /** Seals sign-in states and the users' upstream tokens; the grant store keeps those. */
  sealer: Sealer;
  grants: GrantStore;
  /** With replicas sharing sessions: asks on a GET stream held here, for calls on other replicas. */
  replicaAsks: ReplicaAsks | undefined;
  /** The eras found, shared by the replicas. */
  eras: EraMemo;
  /** The legacy sessions Causeway keeps for legacy clients of modern upstreams, and the asks of their calls. */
  faceFacts: FactsStore;
  rounds: AskRounds;
  /** The gateway cache, when on (cache.maxBytes > 0). */
  cache: GatewayCache | undefined;
}

/** What builds one upstream's parts: its spec and settings, and what the app shares among upstreams. */
interface UpstreamContext {
  spec: UpstreamSpec;
  config: Config;
  metrics: UpstreamMetrics;
  log: Logger;
  /** The app's log, for the legacy faces' own child. */
  rootLog: Logger;
  forward: ForwardPolicy;
  binding: SessionBinding | undefined;
  reachable: Shared['reachable'];
  replicaAsks: Shared['replicaAsks'];
  credentials: UpstreamAuthorization | undefined;
  cache?: UpstreamCache;
  shared: Shared;
}

/** An HTTP upstream's context: its URLs and the one HTTP client for them. */
interface HttpContext extends UpstreamContext {
  targets: TargetSet;
  http: UpstreamHttp;
}

export function upstreamParts(spec: UpstreamSpec, config: Config, metrics: Metrics, log: Logger, shared: Shared): UpstreamParts {
  const upstreamMetrics = new UpstreamMetrics(metrics, spec.name);
  const { principal } = config;
  const credentials = [...DEFAULT_CREDENTIAL_HEADERS, ...config.security.credentialHeaders];
  if (principal.mode === 'header') credentials.push(principal.header);
  const forward = new ForwardPolicy(spec.forwardHeaders, credentials);
  // A legacy session belongs to whoever opened it: the header's principal, or the token's iss and sub.
  const binding = principal.mode === 'none' && config.auth.mode === 'none' ? undefined : new SessionBinding(principal.hashSecret, spec.name);
  const upstreamLog = log.child({ stage: 'upstream', upstream: spec.name });
  const ctx: UpstreamContext = {
    spec,
    config,
    metrics: upstreamMetrics,
    log: upstreamLog,
    rootLog: log,
    forward,
    binding,
    reachable: shared.reachable,
    replicaAsks: shared.replicaAsks,
    credentials: undefined,
    shared,
    // Never past a session's idle end: the stream that would tell of a change ends with it.
    ...(shared.cache ? { cache: new UpstreamCache(shared.cache, spec.name, Math.min(config.cache.keepMs, config.store.idleTtlMs)) } : {}),
  };
  let signIn: UpstreamSignIn | undefined;
  if (spec.credentials?.grant === 'authorization_code') {
    const { sealer, grants } = shared;
    signIn = new UpstreamSignIn({ upstream: spec.name, spec: spec.credentials, callbackUrl: config.auth.callbackUrl, clientMetadataUrl: config.auth.clientMetadataUrl, sealer, grants, log: upstreamLog });
    ctx.credentials = signIn;
  } else if (spec.credentials) ctx.credentials = new UpstreamCredentials(spec.credentials, shared.subjects, upstreamLog);
  const cache = ctx.cache;
  const parts = { spec, forward, metrics: upstreamMetrics, ...(signIn ? { signIn } : {}), ...(cache ? { cache } : {}) };
  const assemble = (client: UpstreamSessionClient, passthrough: LegacyFace, http?: UpstreamHttp, modern?: UpstreamParts['modern']): UpstreamParts => ({
    ...parts,
    client,
    passthrough,
    ...(modern ? { modern } : {}),
    close: async () => {
      await Promise.allSettled([client.close(), passthrough.close()]);
      await http?.close();
    },
  });
  switch (spec.transport) {
    case 'stdio': {
      const children = new Children(upstreamMetrics);
      const client = stdioClient(ctx, children);
      const legacyFace = channelFace(ctx, client);
      if (spec.era === 'legacy') {
        upstreamMetrics.era('legacy');
        return assemble(client, legacyFace);
      }
      // The era probe goes to a child of the pool; a legacy child is stopped once found out.
      const pool = modernStdioPool(ctx, children);
      const probe = (signal: AbortSignal): Promise<ProbeAnswer> =>
        pool.probe(signal, { name: 'causeway', version: VERSION });
      const eras = bothEras(ctx, legacyFace, pool, { probe, onEra: (era) => era === 'legacy' && void pool.release() });
      const parts = assemble(client, eras.passthrough, undefined, eras.modern);
      return { ...parts, close: () => Promise.allSettled([parts.close(), pool.close()]).then(() => undefined) };
    }
    case 'sse': {
      upstreamMetrics.era('legacy');
      // No request of an HTTP+SSE upstream names one of its URLs: its client has no interceptor to pass.
      const http = new UpstreamHttp({ connectTimeoutMs: spec.connectTimeoutMs });
      const client = sseClient(ctx, http, spec.urls[0]!);
      return assemble(client, channelFace(ctx, client), http);
    }
    case 'auto': {
      const hc = httpContext(ctx);
      const client = new AutoClient({
        url: spec.urls[0]!,
        memo: shared.transports,
        headers: spec.headers,
        connectTimeoutMs: spec.connectTimeoutMs,
        probeTimeoutMs: spec.requestTimeoutMs,
        log: ctx.log,
        dispatcher: hc.http.dispatcher,
        build: (found) => (found.transport === 'sse' ? sseClient(ctx, hc.http, found.url) : streamableClient(hc).client),
      });
      const passthrough = new AutoLegacyFace(
        { use: (signal) => client.use(signal), passthrough: legacyPassthrough(hc), channelFace: () => channelFace(ctx, client) },
        log.child({ stage: 'passthrough', upstream: spec.name }),
      );
      const eras = httpEras(hc, passthrough);
      return assemble(client, eras.passthrough, hc.http, eras.modern);
    }
    case 'streamable-http': {
      const hc = httpContext(ctx);
      const eras = httpEras(hc, legacyPassthrough(hc));
      const { client, direct } = streamableClient(hc);
      return { ...assemble(client, eras.passthrough, hc.http, eras.modern), direct };
    }
  }
}

/** The upstream's URLs and its one HTTP client, with the credential its requests carry. */
function httpContext(ctx: UpstreamContext): HttpContext {
  const { spec, credentials } = ctx;
  const targets = targetSet(ctx);
  const http = new UpstreamHttp({
    connectTimeoutMs: spec.connectTimeoutMs,
    requestTimeoutMs: spec.requestTimeoutMs,
    upstream: { name: spec.name, targets, credentials },
  });
  return { ...ctx, targets, http };
}

/** The child processes of a stdio upstream on this replica, the legacy sessions' and the modern pool's: one gauge. */
class Children {
  private legacy = 0;
  private modern = 0;
  constructor(private readonly metrics: UpstreamMetrics) {}
  set(kind: 'legacy' | 'modern', n: number): void {
    if (kind === 'legacy') this.legacy = n;
    else this.modern = n;
    this.metrics.processes(this.legacy + this.modern);
  }
}

function stdioOpener({ spec, log }: UpstreamContext): StdioOpener {
  const cwd = spec.cwd === '' ? undefined : spec.cwd;
  const { command, args, env } = spec;
  return new StdioOpener(spec.name, { command, args, env, cwd, maxLineBytes: spec.maxResponseBytes }, log);
}

/** A 2026 child serves every principal: a small pool of them per replica (upstream.stdioPool). */
function modernStdioPool(ctx: UpstreamContext, children: Children): ModernStdioPool {
  const { spec, metrics, log } = ctx;
  return new ModernStdioPool(spec.name, stdioOpener(ctx), log, {
    size: spec.stdioPool,
    requestTimeoutMs: spec.requestTimeoutMs,
    probeTimeoutMs: spec.connectTimeoutMs,
    onChildren: (n) => children.set('modern', n),
    onRestart: () => metrics.processRestarted(),
  });
}

/** One child process per pooled session, in the replica that opened it. */
function stdioClient(ctx: UpstreamContext, children: Children): UpstreamSessionClient {
  const { spec, config, metrics, log, reachable } = ctx;
  const opener = stdioOpener(ctx);
  const client = new ChannelClient(spec.name, opener, log, {
    requestTimeoutMs: spec.requestTimeoutMs,
    maxChannels: spec.maxProcesses,
    idleTtlMs: config.store.idleTtlMs,
    onRequest: (method, result, seconds) => metrics.upstreamCall(method, result, seconds),
    onChannels: (n) => children.set('legacy', n),
    onRestart: () => metrics.processRestarted(),
  });
  return reachable(spec.name, client);
}

/** One SSE connection per pooled session, in the replica that opened it, as with stdio. */
function sseClient({ spec, config, metrics, log, reachable }: UpstreamContext, http: UpstreamHttp, url: string): UpstreamSessionClient {
  const opener = new SseChannelOpener({
    url,
    dispatcher: http.dispatcher,
    headers: spec.headers,
    connectTimeoutMs: spec.connectTimeoutMs,
    requestTimeoutMs: spec.requestTimeoutMs,
    maxEventBytes: spec.maxResponseBytes,
    log,
    onDrop: () => metrics.streamDropped(),
  });
  const client = new ChannelClient(spec.name, opener, log, {
    requestTimeoutMs: spec.requestTimeoutMs,
    maxChannels: config.store.maxSessions,
    idleTtlMs: config.store.idleTtlMs,
    onRequest: (method, result, seconds) => metrics.upstreamCall(method, result, seconds),
  });
  return reachable(spec.name, client);
}

/** Each legacy client session is an upstream session (a child, a connection) of its own. */
function channelFace(ctx: UpstreamContext, client: UpstreamSessionClient): LegacyFace {
  const { spec, config, rootLog, binding } = ctx;
  const cache = ctx.cache ? { cache: ctx.cache, hint: cacheHintOf(spec.cache) } : undefined;
  return new ChannelLegacyFace(
    {
      client,
      binding,
      idleTtlMs: config.store.idleTtlMs,
      keepAliveMs: config.subscriptions.keepAliveMs,
      ...(cache ? { cache } : {}),
    },
    rootLog.child({ stage: 'legacy-face', upstream: spec.name }),
  );
}

/** The upstream's URLs; they are logged by position, as they may carry credentials. */
function targetSet({ spec, metrics, log }: UpstreamContext): TargetSet {
  return new TargetSet(
    spec.urls,
    { ejectAfterFailures: spec.ejectAfterFailures, ejectMs: spec.ejectMs },
    {
      onEject: (_url, target) => {
        log.warn({ target, forMs: spec.ejectMs }, 'upstream URL ejected: it could not be reached');
        metrics.ejected(target);
      },
      onReadmit: (_url, target) => log.info({ target }, 'upstream URL re-admitted'),
    },
  );
}

/** The session client of a Streamable HTTP upstream (`direct`), and what the pool calls through: it, or the standing streams around it. */
function streamableClient({ spec, config, metrics, log, credentials, replicaAsks, targets, http }: HttpContext): { client: UpstreamSessionClient; direct: UpstreamClient } {
  const client = new UpstreamClient(
    {
      name: spec.name,
      targets,
      headers: spec.headers,
      credentials,
      connectTimeoutMs: spec.connectTimeoutMs,
      requestTimeoutMs: spec.requestTimeoutMs,
      maxResponseBytes: spec.maxResponseBytes,
      http,
    },
    log,
    {
      onRequest: (method, result, seconds) => metrics.upstreamCall(method, result, seconds),
      asks: new OutsideAsks(log, { upstream: spec.name, replicas: replicaAsks, onOutcome: (outcome) => metrics.outsideAsk(outcome) }),
    },
  );
  // Across replicas the session's one GET stream is held by one of them (subscriptions/standing.ts).
  if (config.store.kind !== 'memory' || config.store.maxSessions <= 0) return { client, direct: client };
  return { client: new StandingStreams(client, { upstream: spec.name, max: config.store.maxSessions, policy: spec.standingStream, waitMs: spec.connectTimeoutMs, log }), direct: client };
}

function legacyPassthrough({ spec, rootLog, forward, binding, targets, http }: HttpContext): LegacyFace {
  return new LegacyPassthrough(
    { targets, http, headers: spec.headers, forward, binding, maxResponseBytes: spec.maxResponseBytes },
    rootLog.child({ stage: 'passthrough', upstream: spec.name }),
  );
}

/** An upstream reached over HTTP, in either era: its modern side sends through the upstream's one composed client. */
function httpEras(ctx: HttpContext, legacyFace: LegacyFace): Pick<UpstreamParts, 'passthrough' | 'modern'> {
  const { spec } = ctx;
  if (spec.era === 'legacy') {
    ctx.metrics.era('legacy');
    return { passthrough: legacyFace };
  }
  const wire = httpWire(new UpstreamDispatcher(ctx.http, ctx.targets, spec.headers, spec.name));
  return bothEras(ctx, legacyFace, wire, { targets: ctx.targets.urls });
}

/** How a wire's era is found: its own probe (a stdio child's), the URLs to ask, who hears the era found. */
interface EraProbe {
  probe?(signal: AbortSignal): Promise<ProbeAnswer>;
  targets?: readonly string[];
  onEra?(era: Era): void;
}

/**
 * An upstream may speak either era (upstream.era): a modern client's requests are relayed to it
 * when it speaks 2026-07-28, and legacy clients get Causeway's own legacy face over it; otherwise
 * both go the legacy way. Its modern requests go over `wire`: HTTP, or a stdio child's channel.
 */
function bothEras(
  ctx: UpstreamContext,
  legacyFace: LegacyFace,
  wire: ModernWire,
  how: EraProbe,
): Pick<UpstreamParts, 'passthrough' | 'modern'> {
  const { spec, config, log, shared } = ctx;
  const setting: EraSetting = spec.era;
  const cache = ctx.cache;
  const client = new ModernClient(wire, spec.maxResponseBytes);
  const era = new UpstreamEra({
    upstream: spec.name,
    setting,
    probe: how.probe ?? ((signal, target) => client.probe(signal, { name: 'causeway', version: VERSION }, target)),
    ...(how.targets ? { targets: how.targets } : {}),
    memo: shared.eras,
    log,
    onEra: (found) => {
      ctx.metrics.era(found);
      how.onEra?.(found);
    },
  });
  const translated = new TranslatedFace(
    {
      upstream: spec.name,
      client,
      facts: shared.faceFacts,
      rounds: shared.rounds,
      forward: ctx.forward,
      keepAliveMs: config.subscriptions.keepAliveMs,
      maxRounds: MAX_ROUNDS,
      onRefused: () => era.refused(),
      ...(cache ? { cache } : {}),
    },
    ctx.rootLog.child({ stage: 'legacy-face', upstream: spec.name }),
  );
  return {
    passthrough: new EraLegacyFace(era, legacyFace, translated, log),
    modern: { era, client, maxResponseBytes: spec.maxResponseBytes, listens: new RelayedListens(), ...(cache ? { cache } : {}) },
  };
}

/** input_required rounds one legacy client's call may take through the translated face. */
export const MAX_ROUNDS = 32;

/** The cache hints of an upstream's cache.* policy, by method (a legacy upstream gives none itself). */
export function cacheHintOf(cache: CachePolicy): (method: string) => CacheHint {
  return (method) => {
    const o = cache.methods[method];
    return { ttlMs: o?.ttlMs ?? cache.ttlMs, cacheScope: o?.scope ?? cache.scope };
  };
}
