// The two ports, each registering its own start: the data port (the front door in front of the
// mounts, with the resource server, the rate limits and the sign-in callback, counting each
// request for the status page) and the admin port (/metrics, /healthz, /readyz, the status page).
// The admin port opens first and is closed if the data port cannot be; the drain
// (ingress/drain.ts) closes it last, so the drain itself can be scraped.

import type { AddressInfo } from 'node:net';
import { replayCacheFor, ResourceServer, type ReplayCache, type SubjectTokens } from '../auth/index.js';
import type { Config, Topology } from '../config/index.js';
import { originPolicy } from '../envelope/index.js';
import {
  createAdmin,
  createIngress,
  frontDoor,
  RateLimiter,
  type FrontDoorGiven,
  type Mount,
} from '../ingress/index.js';
import { CountsBy, RequestMetrics, type AuthFailure, type Metrics } from '../metrics/index.js';
import type { SessionStore } from '../pool/index.js';
import {
  ClusterStatus,
  PAGE_POLICY,
  renderPage,
  replicaPart,
  type PartSources,
  type PartStore,
  type Traffic,
} from '../status/index.js';
import type { CrossReplicaListen } from '../subscriptions/index.js';
import type { SignInCallback } from '../upstream/index.js';
import type { Ground } from './registry.js';
import { MemoryCounters, Quotas, RedisCounters, type Counters as QuotaCounters } from '../quotas/index.js';

/** Where the replica is in its life, as the ports tell it. */
export interface Readiness {
  /** The drain has begun: /readyz answers 503. */
  draining: boolean;
  /** The listener is closed: HTTP/1.1 answers close their connection. */
  closing: boolean;
}

export interface Listening {
  /** The data port's address, scheme://host:port and first mount's URL, once listening. */
  address?: AddressInfo;
  origin?: string;
  url?: string;
  /** Origin of the admin port once listening; undefined when disabled. */
  adminUrl?: string;
}

interface FrontDeps {
  mounts: ReadonlyMap<string, Mount>;
  store: SessionStore;
  metrics: Metrics;
  readiness: Readiness;
  listening: Listening;
  subjects: SubjectTokens | undefined;
  signIn: SignInCallback | undefined;
  /** The status page's counts of the requests answered. */
  traffic: Traffic;
}

/** A replica that never reached its shared store shares nothing: not ready, so a Redis URL typo shows. */
const notReadyOf = (store: SessionStore, readiness: Readiness) => () =>
  readiness.draining ? 'draining' : store.notReady?.();

const hostOf = (a: AddressInfo) => (a.family === 'IPv6' ? `[${a.address}]` : a.address);

/** What the front door's policy is built from: the config and topology now running, and what outlives a reload. */
export interface DoorPolicy {
  config: Config;
  topology: Topology;
  store: SessionStore;
  metrics: Metrics;
  /** Kept across reloads: the DPoP proofs seen, the calls counted against quotas, the auth failures' counter. */
  replays: ReplayCache;
  counters: QuotaCounters;
  authFailures: CountsBy<AuthFailure>;
  subjects: SubjectTokens | undefined;
}

/** The front door's deps no reload changes. */
type DoorFixed = Pick<
  FrontDoorGiven,
  'mounts' | 'signIn' | 'log' | 'notReady' | 'closing' | 'observe' | 'count' | 'inFlight'
>;

/** The front door's deps a config gives: its resource server, rates, quotas, limits and origin policy. */
export function doorDeps(ground: Ground, policy: DoorPolicy, fixed: DoorFixed): FrontDoorGiven {
  const { config, topology, store, metrics, replays, authFailures, subjects } = policy;
  const { limits } = config;
  const auth =
    config.auth.mode === 'none'
      ? undefined
      : new ResourceServer(
          config.auth,
          topology.mounts.map((m) => m.path),
          (reason) => authFailures.count(reason),
          replays,
          { subjects, principal: config.principal, tenantClaim: config.quotas.tenantClaim },
        );
  return {
    ...fixed,
    maxHeaderBytes: limits.maxHeaderBytes,
    maxInFlight: limits.maxInFlight,
    body: { maxBytes: limits.maxBodyBytes, timeoutMs: limits.bodyTimeoutMs },
    json: { maxDepth: limits.maxJsonDepth, maxItems: limits.maxJsonItems },
    origin: originPolicy(config.listen.host, config.security.allowedHosts, config.security.allowedOrigins),
    auth,
    principal: config.principal,
    rate: rateLimiter({ ...ground, config }, store),
    quotas: quotas({ ...ground, config }, policy.counters, metrics),
    accessSample: config.log.accessSample,
    audit: config.log.audit,
  };
}

export function ingressPart(ground: Ground, deps: FrontDeps) {
  const { parts, config, topology, inFlight, log } = ground;
  const { mounts, store, metrics, readiness, listening, subjects, signIn, traffic } = deps;
  const { limits } = config;
  const requestMetrics = new RequestMetrics(metrics);
  const policy: DoorPolicy = {
    config,
    topology,
    store,
    metrics,
    replays: replayCacheFor(store),
    counters: store.shared ? new RedisCounters(store.shared.client) : new MemoryCounters(),
    authFailures: new CountsBy<AuthFailure>(metrics.authFailures),
    subjects,
  };
  const fixed: DoorFixed = {
    mounts,
    signIn,
    log,
    notReady: notReadyOf(store, readiness),
    closing: () => readiness.closing,
    observe: (tag, status, seconds) => requestMetrics.request(tag.era, tag.method, status, tag.revision, seconds),
    count: (revision, upstream, client) => traffic.record(revision, upstream, client),
    inFlight,
  };
  const door = frontDoor(doorDeps(ground, policy, fixed));
  const ingress = createIngress(
    {
      host: config.listen.host,
      port: config.listen.port,
      tlsCertFile: config.listen.tlsCertFile,
      tlsKeyFile: config.listen.tlsKeyFile,
      maxHeaderBytes: limits.maxHeaderBytes,
      maxConcurrentStreams: limits.maxConcurrentStreams,
      headersTimeoutMs: limits.headersTimeoutMs,
      idleTimeoutMs: limits.idleTimeoutMs,
      maxConnections: limits.maxConnections,
    },
    door,
    (reason) => metrics.connectionsClosed.labels(reason).inc(),
  );
  parts.onStart('ingress', async () => {
    const addr = await ingress.listen();
    listening.address = addr;
    listening.origin = `${ingress.protocol}://${hostOf(addr)}:${addr.port}`;
    listening.url = `${listening.origin}${topology.mounts[0]!.path}`;
  });
  /** A reload's new policy: requests from now on meet it; the count of those still under the old one. */
  const replace = (config: Config, topology: Topology) =>
    door.replace(doorDeps(ground, { ...policy, config, topology }, fixed));
  return { ingress, replace };
}

/** The limits on requests per second, when any is set. */
function rateLimiter({ config, log }: Ground, store: SessionStore): RateLimiter | undefined {
  const { ratePerSecond, rateBurst, rateMethods } = config.limits;
  if (ratePerSecond <= 0 && Object.keys(rateMethods).length === 0) return undefined;
  const methods = new Map(
    Object.entries(rateMethods).map(([m, r]) => [
      m,
      { ratePerSecond: r.ratePerSecond, burst: burstOf(r.ratePerSecond, r.burst) },
    ]),
  );
  return new RateLimiter(
    { ratePerSecond, burst: burstOf(ratePerSecond, rateBurst), methods },
    store,
    log.child({ stage: 'rate' }),
  );
}

/** The quotas per tenant, when any is set: counted in Redis with the Redis store. */
function quotas({ config, log }: Ground, counters: QuotaCounters, metrics: Metrics): Quotas | undefined {
  const { rules } = config.quotas;
  if (Object.keys(rules).length === 0) return undefined;
  return new Quotas(
    rules,
    counters,
    config.store.keyPrefix,
    {
      counted: (quota) => metrics.quotaCalls.labels(quota).inc(),
      refused: (quota) => metrics.quotaRefusals.labels(quota).inc(),
    },
    log.child({ stage: 'quotas' }),
  );
}

/** A bucket's size: as configured, else the rate rounded up (at least 1). */
function burstOf(ratePerSecond: number, burst: number | undefined): number {
  return burst || Math.max(1, Math.ceil(ratePerSecond));
}

/** What the status page reads besides the ports' own: the parts of the replica, and its liveness among the others. */
export interface StatusDeps {
  sources: Omit<PartSources, 'replicaId' | 'draining' | 'metrics' | 'inFlight'>;
  crossReplica: CrossReplicaListen | undefined;
}

export function adminPart(
  ground: Ground,
  deps: Pick<FrontDeps, 'store' | 'metrics' | 'readiness' | 'listening'>,
  statusDeps: StatusDeps,
) {
  const { parts, config, log } = ground;
  // Published even without an admin port of its own: the other replicas' pages show this one.
  const status = clusterStatus(ground, deps, statusDeps);
  if (config.admin.port < 0) return undefined;
  const { store, metrics, readiness, listening } = deps;
  const admin = createAdmin(
    { host: config.admin.host, port: config.admin.port, token: config.admin.token },
    {
      notReady: notReadyOf(store, readiness),
      metrics: async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }),
      status: {
        json: () => status.view(),
        html: async () => renderPage(await status.view()),
        policy: PAGE_POLICY,
      },
      log: log.child({ stage: 'admin' }),
    },
  );
  parts.onStart(
    'admin',
    async () => {
      const a = await admin.listen();
      listening.adminUrl = `http://${hostOf(a)}:${a.port}`;
    },
    () => admin.close(),
  );
  return admin;
}

/** This replica's part of the status page, published on its liveness beat when the store is shared. */
function clusterStatus(
  { config, replicaId, inFlight, log }: Ground,
  { store, metrics, readiness }: Pick<FrontDeps, 'store' | 'metrics' | 'readiness'>,
  { sources, crossReplica }: StatusDeps,
): ClusterStatus {
  const all: PartSources = { ...sources, replicaId, inFlight, metrics, draining: () => readiness.draining };
  const client = store.shared?.client;
  const shared =
    client && crossReplica
      ? {
          store: client as unknown as PartStore,
          keyPrefix: config.store.keyPrefix,
          liveness: crossReplica.liveness,
          ttlMs: config.subscriptions.takeoverMs,
        }
      : undefined;
  const status = new ClusterStatus(() => replicaPart(all), shared, log.child({ stage: 'status' }));
  status.start();
  return status;
}
