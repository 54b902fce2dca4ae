// Reloading the configuration without a restart: on SIGHUP (main.ts) and on a change of the
// --config file (watched here, debounced), the file is read again, the whole Config is validated,
// and its live settings (config/live.ts) are applied at once: the upstreams added, replaced and
// removed, the mounts with their views and skills made anew, and the front door's policy (scope
// rules, limits, quotas, origins) replaced. Requests under way finish with what they began with;
// what a reload replaced is let go once they are done. An invalid file changes nothing.

import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import {
  configHash,
  ConfigError,
  liveChanges,
  resolveTopology,
  same,
  type Config,
  type Topology,
} from '../config/index.js';
import type { Mount } from '../ingress/index.js';
import type { Metrics } from '../metrics/index.js';
import type { SessionPool } from '../pool/index.js';
import type { Federation, ModernDeps } from '../routing/index.js';
import type { SkillFolder } from '../skills/index.js';
import type { AppParts, Ground } from './registry.js';
import { mountParts, endFederatedStreams, type MountContext } from './mount-parts.js';
import { closeUpstream, endStreams, type Upstreams } from './upstream-parts.js';
import type { UpstreamParts } from './upstream-context.js';
import { adoptInCatalog } from './kept.js';
import { modernDepsOf, type ModernContext } from './sessions.js';
import type { Readiness } from './front.js';
import type { GatewayCache, NameCatalog } from '../cache/index.js';
import type { OutsideAskers } from '../upstream/index.js';

/** Where a reload reads the configuration: the file (if any), then the start-up's environment and flags over it. */
export interface ConfigSource {
  file: string | undefined;
  load(fileText: string | undefined): Config;
}

export type ReloadResult = 'applied' | 'unchanged' | 'invalid';

/** What a reload changes in place, as the parts that read them at request time hold them. */
export interface Reloadable {
  upstreams: Upstreams;
  pool: SessionPool;
  /** The pipeline's view of each upstream, and what one is made with. */
  modern: Map<string, ModernDeps>;
  modernOf: ModernContext;
  mounts: Map<string, Mount>;
  federations: Federation[];
  folders: Map<string, SkillFolder>;
  mountContext: Omit<MountContext, 'federations' | 'modern' | 'partsOf'>;
  /** The front door's policy for a config: returns the count of requests still under the old one. */
  door(config: Config, topology: Topology): { readonly count: number };
  /** The names the replicas' lists taught them, which an upstream added joins. */
  catalog: NameCatalog | undefined;
  /** Which upstreams ask outside a call: what the other replicas learned of an upstream added is read. */
  askers: OutsideAskers;
  /** The gateway cache, which forgets what it kept of an upstream changed or removed. */
  cache: GatewayCache | undefined;
  metrics: Metrics;
  readiness: Readiness;
}

/** How often a reload looks whether the requests of the old configuration are done. */
const POLL_MS = 50;
/** Changes of the file closer than this are read once (an editor's save, a ConfigMap's symlink swap). */
const DEBOUNCE_MS = 200;

export class Reloader {
  private running: { config: Config; topology: Topology };
  private queue: Promise<unknown> = Promise.resolve();
  private lastText: string | undefined;
  private watcher: FSWatcher | undefined;
  private debounce: NodeJS.Timeout | undefined;

  constructor(
    private readonly ground: Ground,
    private readonly live: Reloadable,
    private readonly source: ConfigSource | undefined,
  ) {
    this.running = { config: ground.config, topology: ground.topology };
  }

  get config(): Config {
    return this.running.config;
  }

  get topology(): Topology {
    return this.running.topology;
  }

  /** Reads the configuration again and applies it; one reload at a time, in the order asked. */
  reload(reason: string): Promise<ReloadResult> {
    const next = this.queue.then(() => this.readAndApply(reason));
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Watches the file's folder (a ConfigMap volume swaps a symlink there), once started. */
  start(): void {
    const file = this.source?.file;
    if (file === undefined) return;
    void readFile(file, 'utf8').then(
      (text) => (this.lastText ??= text),
      () => undefined,
    );
    try {
      this.watcher = watch(dirname(file), (_event, name) => {
        if (name !== null && name !== basename(file) && !name.startsWith('..')) return;
        clearTimeout(this.debounce);
        this.debounce = setTimeout(() => void this.reload('file changed'), DEBOUNCE_MS);
      });
      this.watcher.on('error', (err) => this.ground.log.warn({ err, file }, 'config file no longer watched'));
    } catch (err) {
      this.ground.log.warn({ err, file }, 'config file not watched: reload with SIGHUP');
    }
  }

  stop(): void {
    clearTimeout(this.debounce);
    this.watcher?.close();
  }

  private async readAndApply(reason: string): Promise<ReloadResult> {
    const { log } = this.ground;
    const started = performance.now();
    if (this.live.readiness.draining) return 'unchanged';
    const file = this.source?.file;
    let next: Config;
    let text: string | undefined;
    try {
      text = file === undefined ? undefined : await readFile(file, 'utf8');
      // A file event that changed nothing in it (its folder touched, a save of the same text).
      if (reason === 'file changed' && text === this.lastText) return 'unchanged';
      if (!this.source) throw new ConfigError(['no configuration source to reload from']);
      next = this.source.load(text);
    } catch (err) {
      return this.refused(err, reason, text);
    }
    this.lastText = text;
    const { applied, restartNeeded } = liveChanges(this.running.config, next);
    if (restartNeeded.length > 0) {
      log.warn({ settings: restartNeeded }, `not applied, a restart is needed for: ${restartNeeded.join(', ')}`);
    }
    if (same(applied, this.running.config)) {
      this.live.metrics.configReloads.labels('unchanged').inc();
      log.info({ reason }, 'configuration reloaded: nothing to change');
      return 'unchanged';
    }
    try {
      const changes = await this.apply(applied);
      const hash = configHash(applied);
      this.live.metrics.configReloads.labels('applied').inc();
      this.live.metrics.configApplied(hash);
      const ms = Math.round((performance.now() - started) * 10) / 10;
      log.info({ reason, config: hash, ms, ...changes }, 'configuration reloaded');
      return 'applied';
    } catch (err) {
      return this.refused(err, reason, text);
    }
  }

  private refused(err: unknown, reason: string, text: string | undefined): ReloadResult {
    // Not read again until it changes: the same mistake is logged once.
    this.lastText = text;
    const problems = err instanceof ConfigError ? err.problems : [err instanceof Error ? err.message : String(err)];
    this.live.metrics.configReloads.labels('invalid').inc();
    this.ground.log.error(
      { reason, problems },
      `configuration not reloaded, the running one stays:\n  ${problems.join('\n  ')}`,
    );
    return 'invalid';
  }

  /** Everything made first, then swapped in at once; what it replaced is let go once its requests are done. */
  private async apply(config: Config): Promise<Record<string, string[]>> {
    const { topology, problems } = resolveTopology(config);
    if (problems.length > 0) throw new ConfigError([...problems]);
    const { live } = this;
    const before = new Map(live.upstreams.parts);
    const specs = new Map(topology.upstreams.map((u) => [u.name, u]));
    const removed = [...before.keys()].filter((name) => !specs.has(name));
    const changed = topology.upstreams.filter((u) => before.has(u.name) && !same(u, before.get(u.name)!.spec));
    const added = topology.upstreams.filter((u) => !before.has(u.name));
    const unsupported = [...added, ...changed].filter(
      (u) =>
        (u.credentials?.grant === 'authorization_code' && !live.upstreams.signIn) ||
        (u.credentials?.grant === 'token_exchange' && !live.upstreams.subjects),
    );
    if (unsupported.length > 0) {
      throw new ConfigError(
        unsupported.map(
          (u) => `upstreams.${u.name}: its credentials' grant is the first of its kind: restart to add it`,
        ),
      );
    }
    const made = new Map([...added, ...changed].map((spec) => [spec.name, live.upstreams.build(spec, config)]));
    const parts = new Map([...before].filter(([name]) => specs.has(name) && !made.has(name)).concat([...made]));
    const modern = new Map(
      [...parts].map(([name, u]) => [
        name,
        made.has(name) ? modernDepsOf(name, u, live.modernOf) : live.modern.get(name)!,
      ]),
    );
    const federations: Federation[] = [];
    let next: ReturnType<typeof mountParts> | undefined;
    try {
      next = mountParts(topology.mounts, {
        ...live.mountContext,
        modern,
        partsOf: (name) => parts.get(name)!,
        federations,
      });
      await Promise.all([...next.folders.values()].map((f) => f.start()));
    } catch (err) {
      next?.folders.forEach((f) => f.close());
      await Promise.all([...made.values()].map(closeUpstream));
      throw err;
    }
    // The swap: nothing awaited from here to the door's replacement.
    const ends = [...removed, ...changed.map((u) => u.name)].map((name) =>
      live.pool.swapUpstream(name, made.get(name) && poolUpstream(made.get(name)!)),
    );
    for (const u of added) live.pool.swapUpstream(u.name, poolUpstream(made.get(u.name)!));
    const replacedMounts = [...live.mounts.values()];
    const replacedFolders = [...live.folders.values()];
    replaceAll(live.upstreams.parts, parts);
    replaceAll(live.modern, modern);
    replaceAll(live.mounts, next.mounts);
    replaceAll(live.folders, next.folders);
    live.federations.splice(0, live.federations.length, ...federations);
    const { catalog } = live;
    if (catalog) for (const [name, u] of made) adoptInCatalog(catalog, name, u, this.ground.log);
    for (const name of made.keys())
      live.askers
        .adopt(name)
        .catch((err: unknown) =>
          this.ground.log.warn({ err }, 'cannot read what the replicas learned of an upstream yet'),
        );
    for (const name of [...removed, ...changed.map((u) => u.name)]) live.cache?.forget(name);
    this.running = { config, topology };
    const old = live.door(config, topology);
    for (const f of federations) void f.check();
    replacedFolders.forEach((f) => f.close());
    const gone = [...removed, ...changed.map((u) => u.name)].map((name) => before.get(name)!);
    this.letGo(old, gone, ends, replacedMounts).catch((err: unknown) =>
      this.ground.log.warn({ err }, 'letting go of what a reload replaced failed'),
    );
    return {
      added: added.map((u) => u.name),
      changed: changed.map((u) => u.name),
      removed,
      mounts: topology.mounts.map((m) => m.path),
    };
  }

  /** Once the requests of the old configuration are done: the sessions and clients of the upstreams it replaced end. */
  private async letGo(
    old: { readonly count: number },
    gone: UpstreamParts[],
    ends: Array<() => Promise<void>>,
    mounts: Mount[],
  ): Promise<void> {
    // Listens of the upstreams replaced, and of federated mounts' legacy clients, end with the closing result.
    gone.forEach(endStreams);
    mounts.forEach(endFederatedStreams);
    const deadline = Date.now() + this.ground.config.drain.timeoutMs;
    while (old.count > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, POLL_MS));
    await Promise.all(ends.map((end) => end()));
    await Promise.all(gone.map(closeUpstream));
  }
}

const poolUpstream = (u: UpstreamParts) => ({ client: u.client, protocolVersion: u.spec.protocolVersion });

function replaceAll<K, V>(target: Map<K, V>, next: ReadonlyMap<K, V>): void {
  target.clear();
  for (const [k, v] of next) target.set(k, v);
}

/** The reloader, started with the ports and stopped first in the drain. */
export function reloadPart(ground: Ground, live: Reloadable, source: ConfigSource | undefined): Reloader {
  const reloader = new Reloader(ground, live, source);
  const parts: AppParts = ground.parts;
  parts.onStart('config-watch', async () => reloader.start());
  parts.onClose('config-watch', () => reloader.stop());
  return reloader;
}
