// Composition root: builds each part once from the Config, in an order where each finds what it
// uses already made. Each part registers its own start-up and drain steps (parts/); the order
// those run in is data (parts/registry.ts), read back as App.shutdownOrder. No logic here.

import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { ConfigError, configHash, resolveTopology, type Config } from './config/index.js';
import { drain } from './ingress/index.js';
import type { Logger } from './log.js';
import { createMetrics } from './metrics/index.js';
import { createStore, type SessionStore } from './pool/index.js';
import { Traffic, trafficEra } from './status/index.js';
import { IdMinter } from './upstream/index.js';
import { VERSION } from './version.js';
import * as P from './parts/index.js';

export interface App {
  listen(): Promise<AddressInfo>;
  /**
   * Graceful stop in phases (ingress/drain.ts): readyz fails, serving goes on for drain.delayMs,
   * then the listener closes and in-flight work finishes.
   */
  drain(): Promise<void>;
  /** URL of the first mount once listening. */
  readonly url: string | undefined;
  /** scheme://host:port of the data port once listening; mounts are paths under it. */
  readonly origin: string | undefined;
  /** Origin of the admin port (/metrics, /healthz, /readyz) once listening; undefined when disabled. */
  readonly adminUrl: string | undefined;
  /** Mount path -> the upstreams it serves (as the last reload left them). */
  readonly mounts: Readonly<Record<string, string[]>>;
  /** Reads the configuration again and applies what may change live (parts/reload.ts). */
  reload(reason: string): Promise<P.ReloadResult>;
  /** The drain's close steps, in the order it runs them (parts/registry.ts), for this config. */
  readonly shutdownOrder: readonly string[];
}

export function createApp(config: Config, log: Logger, given?: SessionStore, source?: P.ConfigSource): App {
  const { topology, problems } = resolveTopology(config);
  if (problems.length > 0) throw new ConfigError([...problems]);
  const parts: P.AppParts = new P.Parts(P.ORDER, log.child({ stage: 'parts' }));
  const ground: P.Ground = { parts, config, topology, replicaId: randomUUID(), inFlight: { count: 0 }, log };
  // The status page's counts; an upstream's era is read when a request is counted.
  const traffic = new Traffic((name) => trafficEra(upstreams.parts, name));
  // The levels are read at scrape time, when every part below exists.
  const metrics = createMetrics(
    P.probesOf(
      () => reloader.topology,
      () => ({
        held: bridge.held,
        subscriptions,
        tasks,
        federations,
        ingress,
        pool,
        cache,
        inFlight: ground.inFlight,
        traffic,
      }),
    ),
    { version: VERSION, config: configHash(config) },
  );
  const store = P.storePart(ground, given ?? createStore(config, log.child({ stage: 'store' })));
  const { crossReplica, events } = P.crossReplicaPart(ground, (keyId, method) => P.staleFacts(pool, keyId, method));
  const replicaAsks = P.replicaAsksPart(ground, crossReplica);
  const askers = P.askersPart(ground, store, crossReplica);
  const rounds = P.roundsPart(ground, crossReplica);
  const reachable = P.relayPart(ground);
  const cache = P.cachePart(ground, store, metrics, crossReplica);
  const upstreams = P.upstreamsPart(ground, store, metrics, { reachable, replicaAsks, rounds, cache, askers });
  const pool = P.poolPart(ground, store, upstreams.parts, metrics, { adopted: (s) => subscriptions.stand(s), cache });
  const catalog = P.catalogPart(ground, store, crossReplica, upstreams.parts);
  const ids = new IdMinter();
  const bridge = P.heldPart(ground, { ids, sealer: upstreams.sealer });
  const subscriptions = P.subscriptionsPart(
    ground,
    { pool, upstreams: upstreams.parts, ids, events, askers },
    crossReplica,
    cache,
  );
  const tasks = P.tasksPart(ground, store, { pool, upstreams: upstreams.parts, ids, subscriptions });
  const modernOf = { pool, ids, bridge, subscriptions, tasks };
  const modern = P.modernDeps(upstreams.parts, modernOf);
  // Each mount: its upstream, or the federation of its upstreams, and its skills folder in front.
  const { mounts, federations, folders, mountContext } = P.mountsPart(ground, {
    ...{ modern, metrics, subscriptions, facts: upstreams.faceFacts, rounds },
    partsOf: (name) => upstreams.parts.get(name)!,
  });
  const readiness: P.Readiness = { draining: false, closing: false };
  const listening: P.Listening = {};
  const front = { store, metrics, readiness, listening };
  const sources = { version: VERSION, upstreams: upstreams.parts, pool, held: bridge.held, subscriptions };
  const status = { sources: { ...sources, started: new Date(), tasks, cache, skills: folders, traffic }, crossReplica };
  const admin = P.adminPart(ground, front, status);
  const inbound = { mounts, subjects: upstreams.subjects, signIn: upstreams.signIn, traffic };
  const { ingress, replace: door } = P.ingressPart(ground, { ...front, ...inbound });
  const inPlace = { upstreams, pool, modern, mounts, federations, folders, mountContext, door, metrics };
  const reloader = P.reloadPart(ground, { ...inPlace, catalog, askers, cache, modernOf, readiness }, source);
  return {
    get url() {
      return listening.url;
    },
    get origin() {
      return listening.origin;
    },
    get adminUrl() {
      return listening.adminUrl;
    },
    get mounts() {
      return Object.fromEntries(reloader.topology.mounts.map((m) => [m.path, m.upstreams]));
    },
    reload: (reason) => reloader.reload(reason),
    shutdownOrder: parts.shutdownOrder,
    async listen() {
      await parts.start();
      return listening.address!;
    },
    async drain() {
      if (readiness.draining) return;
      readiness.draining = true;
      const { inFlight } = ground;
      const markClosing = () => {
        readiness.closing = true;
        log.info({ inFlight: inFlight.count }, 'listener closed; finishing the requests in flight');
      };
      const steps = { closeStreams: (ms: number) => parts.endStreams(ms), cancelHeld: () => parts.letGo() };
      await drain({ ingress, inFlight, markClosing, ...steps, release: parts.releases(), admin }, config.drain);
    },
  };
}
