// Each upstream's parts, built from its spec: the client for its transport (Streamable HTTP, a
// stdio child or HTTP+SSE connection per session, or auto), the face legacy clients get, its
// forward policy and metrics. An HTTP upstream has one HTTP client (upstream/http/compose/) that
// its session client, its passthrough, its HTTP+SSE channels and its transport probe share; the
// parts close it once both are done with it. Each upstream registers its own stream ends and
// close; what the upstreams share is made here once.
import type { Config, UpstreamSpec } from '../config/index.js';
import type { Logger } from '../log.js';
import { SubjectTokens } from '../auth/index.js';
import { UpstreamCache } from '../cache/index.js';
import { UpstreamMetrics, type Metrics } from '../metrics/index.js';
import { StateSealer } from '../mrtr/index.js';
import { AutoLegacyFace, SessionBinding, type LegacyFace } from '../passthrough/index.js';
import type { SessionStore } from '../pool/index.js';
import { MemoryFacts, RedisFacts } from '../translate/index.js';
import { VERSION } from '../version.js';
import {
  AutoClient,
  DEFAULT_CREDENTIAL_HEADERS,
  ForwardPolicy,
  MemoryEraMemo,
  MemoryGrants,
  RedisEraMemo,
  SignInCallback,
  TransportMemo,
  UpstreamCredentials,
  UpstreamHttp,
  UpstreamSignIn,
  type ProbeAnswer,
  type UpstreamSessionClient,
} from '../upstream/index.js';
import type { Ground } from './registry.js';
import type { Shared, UpstreamContext, UpstreamParts } from './upstream-context.js';
import {
  bothEras,
  channelFace,
  Children,
  httpContext,
  httpEras,
  legacyPassthrough,
  modernStdioPool,
  sseClient,
  stdioClient,
  streamableClient,
} from './upstream-clients.js';

/** One upstream's context: its metrics, forward policy, session binding, credential and cache. */
function upstreamContext(
  spec: UpstreamSpec,
  config: Config,
  metrics: Metrics,
  log: Logger,
  shared: Shared,
): { ctx: UpstreamContext; signIn: UpstreamSignIn | undefined } {
  const upstreamMetrics = new UpstreamMetrics(metrics, spec.name);
  const { principal } = config;
  const credentials = [...DEFAULT_CREDENTIAL_HEADERS, ...config.security.credentialHeaders];
  if (principal.mode === 'header') credentials.push(principal.header);
  const forward = new ForwardPolicy(spec.forwardHeaders, credentials);
  // A legacy session belongs to whoever opened it: the header's principal, or the token's iss and sub.
  const binding =
    principal.mode === 'none' && config.auth.mode === 'none'
      ? undefined
      : new SessionBinding(principal.hashSecret, spec.name);
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
    ...(shared.cache
      ? { cache: new UpstreamCache(shared.cache, spec.name, Math.min(config.cache.keepMs, config.store.idleTtlMs)) }
      : {}),
  };
  let signIn: UpstreamSignIn | undefined;
  if (spec.credentials?.grant === 'authorization_code') {
    const { sealer, grants } = shared;
    signIn = new UpstreamSignIn({
      upstream: spec.name,
      spec: spec.credentials,
      callbackUrl: config.auth.callbackUrl,
      clientMetadataUrl: config.auth.clientMetadataUrl,
      sealer,
      grants,
      log: upstreamLog,
    });
    ctx.credentials = signIn;
  } else if (spec.credentials)
    ctx.credentials = new UpstreamCredentials(spec.credentials, shared.subjects, upstreamLog);
  return { ctx, signIn };
}

export function upstreamParts(
  spec: UpstreamSpec,
  config: Config,
  metrics: Metrics,
  log: Logger,
  shared: Shared,
): UpstreamParts {
  const { ctx, signIn } = upstreamContext(spec, config, metrics, log, shared);
  const upstreamMetrics = ctx.metrics;
  const cache = ctx.cache;
  const parts = {
    spec,
    forward: ctx.forward,
    metrics: upstreamMetrics,
    ...(signIn ? { signIn } : {}),
    ...(cache ? { cache } : {}),
  };
  const assemble = (
    client: UpstreamSessionClient,
    passthrough: LegacyFace,
    http?: UpstreamHttp,
    modern?: UpstreamParts['modern'],
  ): UpstreamParts => ({
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
        build: (found) =>
          found.transport === 'sse' ? sseClient(ctx, hc.http, found.url) : streamableClient(hc).client,
      });
      const passthrough = new AutoLegacyFace(
        {
          use: (signal) => client.use(signal),
          passthrough: legacyPassthrough(hc),
          channelFace: () => channelFace(ctx, client),
        },
        log.child({ stage: 'passthrough', upstream: spec.name }),
      );
      const eras = httpEras(hc, passthrough);
      return {
        ...assemble(client, eras.passthrough, hc.http, eras.modern),
        targets: hc.targets,
        found: () => client.transport,
      };
    }
    case 'streamable-http': {
      const hc = httpContext(ctx);
      const eras = httpEras(hc, legacyPassthrough(hc));
      const { client, direct } = streamableClient(hc);
      const parts = assemble(client, eras.passthrough, hc.http, eras.modern);
      return { ...parts, direct, targets: hc.targets };
    }
  }
}

/** Every upstream's parts, each registering its own stream ends and close, and what they share. */
export interface Upstreams {
  /** By name; a reload changes it in place. */
  parts: Map<string, UpstreamParts>;
  /** An upstream's parts, made as at start-up: what a reload adds. */
  build(spec: UpstreamSpec, config: Config): UpstreamParts;
  /** Seals requestState, and the users' sign-in states and upstream tokens. */
  sealer: StateSealer;
  /** The clients' own tokens, kept for the upstreams that exchange them for theirs. */
  subjects: SubjectTokens | undefined;
  /** Where the users' sign-ins at upstreams come back to, when some upstream wants their own token. */
  signIn: SignInCallback | undefined;
  /** The legacy sessions Causeway keeps for legacy clients of modern upstreams. */
  faceFacts: Shared['faceFacts'];
}

export function upstreamsPart(
  ground: Ground,
  store: SessionStore,
  metrics: Metrics,
  bridges: Pick<Shared, 'reachable' | 'replicaAsks' | 'rounds' | 'cache' | 'askers'>,
): Upstreams {
  const { parts, config, topology, log } = ground;
  const subjects = topology.upstreams.some((u) => u.credentials?.grant === 'token_exchange')
    ? new SubjectTokens()
    : undefined;
  const sealer = new StateSealer(config.mrtr.stateKeys);
  const redis = store.shared?.client;
  const { keyPrefix, idleTtlMs } = config.store;
  const shared: Shared = {
    ...bridges,
    // Each URL of an auto upstream is probed once.
    transports: new TransportMemo(),
    subjects,
    sealer,
    grants: store.shared?.grants ?? new MemoryGrants(),
    // Legacy clients of modern upstreams: their sessions' facts and eras in the shared store.
    eras: redis ? new RedisEraMemo(redis, keyPrefix) : new MemoryEraMemo(),
    faceFacts: redis ? new RedisFacts(redis, keyPrefix, idleTtlMs) : new MemoryFacts(idleTtlMs),
  };
  const build = (spec: UpstreamSpec, config: Config) => upstreamParts(spec, config, metrics, log, shared);
  // A reload adds, replaces and removes entries: the drain ends and closes those there then.
  const upstreams = new Map(topology.upstreams.map((spec) => [spec.name, build(spec, config)]));
  // An HTTP upstream's era costs one request: found at start-up, not by the first client's. A
  // stdio upstream's costs a child, and one with credentials a token: those wait for the first
  // request that needs the era. A probe that says nothing is tried again by that request too.
  const cheap = (u: UpstreamParts) => u.spec.transport === 'streamable-http' && u.spec.credentials === undefined;
  parts.onStart('eras', () =>
    Promise.allSettled([...upstreams.values()].filter(cheap).map((u) => u.modern?.era.era())),
  );
  parts.onEndStreams('upstreams', () => upstreams.forEach(endStreams));
  parts.onClose('upstreams', () => Promise.all([...upstreams.values()].map(closeUpstream)));
  const signIns = new Map([...upstreams].flatMap(([name, u]) => (u.signIn ? [[name, u.signIn] as const] : [])));
  const { callbackUrl, clientMetadataUrl } = config.auth;
  const signIn = signIns.size > 0 ? new SignInCallback(callbackUrl, clientMetadataUrl, sealer, signIns) : undefined;
  return { parts: upstreams, build, sealer, subjects, signIn, faceFacts: shared.faceFacts };
}

/** Listen streams never finish on their own: they end with the closing result [SUBS]. */
export function endStreams(u: UpstreamParts): void {
  u.passthrough.endStreams?.();
  u.modern?.listens.endAll();
}

/** One upstream that fails to close holds up neither the others nor the rest of the drain. */
export const closeUpstream = (u: UpstreamParts): Promise<void> => u.close().catch(() => undefined);
