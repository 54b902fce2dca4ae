// Each mount's parts, built from its spec: the upstream it serves (its pipeline view and legacy
// face), or the federation of its upstreams, with the skills folder in front when it has one. A
// federated mount's legacy clients get the translated legacy face over the mount's own modern
// face (routing/loopback.ts): merged lists, routed calls and rounds from any member, whatever
// each member's era. A mount's view (mounts.<path>.tools, ...) is put where both eras meet it: on
// its modern requests, which a federated mount's legacy face reaches too, and around a single
// upstream's legacy face. Part of the composition root: app.ts calls it once.

import type { CachePolicy, MountSpec } from '../config/index.js';
import type { Mount } from '../ingress/index.js';
import type { Logger } from '../log.js';
import { UpstreamMetrics, type Metrics } from '../metrics/index.js';
import { compileRules, Federation, loopbackWire, type ModernDeps } from '../routing/index.js';
import { serveModern } from '../pipeline.js';
import { TranslatedFace, type AskRounds, type FactsStore } from '../translate/index.js';
import { ViewLegacyFace } from '../passthrough/index.js';
import { ViewFilter } from '../view/index.js';
import { ForwardPolicy, ModernClient } from '../upstream/index.js';
import { SkillFolder, SkillsFront, SkillsLegacyFace } from '../skills/index.js';
import type { Subscriptions } from '../subscriptions/index.js';
import { cacheHintOf, MAX_ROUNDS, type UpstreamParts } from './upstream-context.js';
import { VERSION } from '../version.js';
import { WarmLane } from '../warm/index.js';
import type { Ground } from './registry.js';

export interface MountContext {
  /** The pipeline's view of each upstream. */
  modern: ReadonlyMap<string, ModernDeps>;
  partsOf(name: string): UpstreamParts;
  metrics: Metrics;
  subscriptions: Subscriptions;
  /** cache.*: the hints a federation's skills carry. */
  cache: CachePolicy;
  /** Filled with the federations made, for the app's probes and start-up checks. */
  federations: Federation[];
  /** What the legacy face of a federated mount keeps: its clients' sessions and their calls' asks. */
  face: { facts: FactsStore; rounds: AskRounds; keepAliveMs: number; maxResponseBytes: number };
  log: Logger;
}

export function mountParts(
  specs: readonly MountSpec[],
  ctx: MountContext,
): { mounts: Map<string, Mount>; folders: Map<string, SkillFolder> } {
  const mounts = new Map<string, Mount>();
  const folders = new Map<string, SkillFolder>();
  const { modern, partsOf, metrics, subscriptions, federations, log } = ctx;
  for (const m of specs) {
    const folder =
      m.skills.length === 0 ? undefined : new SkillFolder(m.skills, log.child({ stage: 'skills', mount: m.path }));
    if (folder) folders.set(m.path, folder);
    const single = m.upstreams.length === 1 ? modern.get(m.upstreams[0]!)! : undefined;
    const view = m.view && new ViewFilter(m.view);
    // A federation's merged answers are counted by its mount path.
    const mountMetrics = single ? single.metrics : new UpstreamMetrics(metrics, m.path);
    const skills = folder && { folder, prefixes: m.skills.map((r) => r.prefix), pageSize: m.pageSize };
    const front =
      skills &&
      new SkillsFront({
        ...skills,
        cacheHint: single ? single.cacheHint : cacheHintOf(ctx.cache),
        serverInfo: { name: 'causeway', version: VERSION },
        upstreamModern: () => single?.modern?.era.current === 'modern',
        metrics: mountMetrics,
        log: log.child({ stage: 'skills', mount: m.path }),
      });
    if (single) {
      const parts = partsOf(single.upstreamName);
      const face = skills ? new SkillsLegacyFace(parts.passthrough, skills) : parts.passthrough;
      // A virtual server's calls take the whole pipeline, where its view is applied.
      const warm = !view && parts.direct && new WarmLane(single, parts.direct, front);
      mounts.set(m.path, {
        path: m.path,
        passthrough: view ? new ViewLegacyFace(face, view) : face,
        upstream: single,
        ...(front ? { front } : {}),
        ...(warm ? { warm } : {}),
        ...(view ? { view } : {}),
      });
      continue;
    }
    const federation = new Federation({
      path: m.path,
      members: m.upstreams.map((name) => ({
        name,
        prefix: m.prefix.replaceAll('{upstream}', name),
        deps: modern.get(name)!,
      })),
      rules: compileRules(m.routes),
      pageSize: m.pageSize,
      serverInfo: { name: 'causeway', version: VERSION },
      metrics: mountMetrics,
      subscriptions,
      log: log.child({ stage: 'federation', mount: m.path }),
      ...(view ? { view } : {}),
    });
    federations.push(federation);
    const passthrough = federatedFace(m.path, () => mount, ctx);
    const mount: Mount = {
      path: m.path,
      passthrough,
      federation,
      ...(front ? { front } : {}),
      ...(view ? { view } : {}),
    };
    mounts.set(m.path, mount);
  }
  return { mounts, folders };
}

/**
 * The mounts, registering their own steps: the skills folders start before traffic and close last,
 * the federations' name conflicts are checked at start-up, their legacy listen streams end in the drain.
 */
export function mountsPart(
  { parts, config, topology, log }: Ground,
  given: Pick<MountContext, 'modern' | 'partsOf' | 'metrics' | 'subscriptions'> &
    Pick<MountContext['face'], 'facts' | 'rounds'>,
): {
  mounts: Map<string, Mount>;
  federations: Federation[];
  folders: Map<string, SkillFolder>;
  /** What a reload makes its mounts with, beside the upstreams. */
  mountContext: Omit<MountContext, 'federations' | 'modern' | 'partsOf'>;
} {
  const { modern, partsOf, metrics, subscriptions, facts, rounds } = given;
  const context = {
    metrics,
    subscriptions,
    cache: config.cache,
    face: {
      facts,
      rounds,
      keepAliveMs: config.subscriptions.keepAliveMs,
      maxResponseBytes: Math.max(...topology.upstreams.map((u) => u.maxResponseBytes)),
    },
    log,
  };
  const federations: Federation[] = [];
  const { mounts, folders } = mountParts(topology.mounts, { ...context, modern, partsOf, federations });
  // A reload changes the three in place: the drain closes what is there then.
  parts.onStart('skills', () => Promise.all([...folders.values()].map((f) => f.start())));
  parts.onClose('skills', () => folders.forEach((f) => f.close()));
  parts.onStart('federations', () => Promise.all(federations.map((f) => f.check())));
  parts.onEndStreams('mounts', () => mounts.forEach(endFederatedStreams));
  return { mounts, federations, folders, mountContext: context };
}

/** A federated mount's legacy listen streams end with the closing result. */
export function endFederatedStreams(m: Mount): void {
  if (m.federation) m.passthrough.endStreams?.();
}

/** The translated legacy face over a federated mount's modern face (its skills front included). */
function federatedFace(path: string, mount: () => Mount, ctx: MountContext): TranslatedFace {
  const { face, log } = ctx;
  const faceLog = log.child({ stage: 'legacy-face', mount: path });
  const client = new ModernClient(
    loopbackWire((ex) => serveModern(ex, mount()), faceLog),
    face.maxResponseBytes,
  );
  return new TranslatedFace(
    {
      upstream: path,
      client,
      facts: face.facts,
      rounds: face.rounds,
      // The inner pipeline gets the client's headers as the front door did; each member's own policy picks from them.
      forward: new ForwardPolicy(['*'], []),
      keepAliveMs: face.keepAliveMs,
      maxRounds: MAX_ROUNDS,
    },
    faceLog,
  );
}
