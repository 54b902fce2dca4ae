// The clients and faces of one upstream, by transport: a stdio child or an HTTP+SSE connection
// per session, a Streamable HTTP client (with its standing streams), the legacy passthrough, and
// the modern side of an upstream that may speak either era. Part of the composition root:
// upstream-parts.ts builds each upstream from them.

import { UpstreamMetrics } from '../metrics/index.js';
import { ChannelLegacyFace, EraLegacyFace, LegacyPassthrough, type LegacyFace } from '../passthrough/index.js';
import { TranslatedFace } from '../translate/index.js';
import { VERSION } from '../version.js';
import {
  ChannelClient,
  OutsideAsks,
  SseChannelOpener,
  StdioOpener,
  TargetSet,
  UpstreamClient,
  ModernClient,
  ModernStdioPool,
  httpWire,
  type ModernWire,
  RelayedListens,
  UpstreamDispatcher,
  UpstreamEra,
  UpstreamHttp,
  type Era,
  type EraSetting,
  type ProbeAnswer,
  type UpstreamSessionClient,
} from '../upstream/index.js';
import {
  cacheHintOf,
  MAX_ROUNDS,
  type HttpContext,
  type UpstreamContext,
  type UpstreamParts,
} from './upstream-context.js';

/** The upstream's URLs and its one HTTP client, with the credential its requests carry. */
export function httpContext(ctx: UpstreamContext): HttpContext {
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
export class Children {
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
export function modernStdioPool(ctx: UpstreamContext, children: Children): ModernStdioPool {
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
export function stdioClient(ctx: UpstreamContext, children: Children): UpstreamSessionClient {
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
export function sseClient(
  { spec, config, metrics, log, reachable }: UpstreamContext,
  http: UpstreamHttp,
  url: string,
): UpstreamSessionClient {
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
export function channelFace(ctx: UpstreamContext, client: UpstreamSessionClient): LegacyFace {
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

/**
 * The session client of a Streamable HTTP upstream: what the pool calls through (`client`) and the
 * client itself (`direct`), the same here.
 */
export function streamableClient({
  spec,
  metrics,
  log,
  credentials,
  replicaAsks,
  shared,
  targets,
  http,
}: HttpContext): { client: UpstreamSessionClient; direct: UpstreamClient } {
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
      asks: new OutsideAsks(log, {
        upstream: spec.name,
        replicas: replicaAsks,
        onOutcome: (outcome) => metrics.outsideAsk(outcome),
        onAsk: () => shared.askers.learn(spec.name),
      }),
    },
  );
  return { client, direct: client };
}

export function legacyPassthrough({ spec, rootLog, forward, binding, targets, http }: HttpContext): LegacyFace {
  return new LegacyPassthrough(
    { targets, http, headers: spec.headers, forward, binding, maxResponseBytes: spec.maxResponseBytes },
    rootLog.child({ stage: 'passthrough', upstream: spec.name }),
  );
}

/** An upstream reached over HTTP, in either era: its modern side sends through the upstream's one composed client. */
export function httpEras(ctx: HttpContext, legacyFace: LegacyFace): Pick<UpstreamParts, 'passthrough' | 'modern'> {
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
export function bothEras(
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
    modern: {
      era,
      client,
      maxResponseBytes: spec.maxResponseBytes,
      listens: new RelayedListens(),
      ...(cache ? { cache } : {}),
    },
  };
}
