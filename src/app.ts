// Composition root: builds each stage once from the Config and wires them together. No logic.

import type { AddressInfo } from 'node:net';
import { ConfigError, resolveTopology, type Config } from './config/index.js';
import { originPolicy } from './envelope/index.js';
import { createAdmin, createIngress, drain, frontDoor, RateLimiter } from './ingress/index.js';
import type { Logger } from './log.js';
import { AuthMetrics, CacheMetrics, createMetrics, RequestMetrics, StoreMetrics } from './metrics/index.js';
import { GatewayCache, NameCatalog, RedisTier } from './cache/index.js';
import { replayCacheFor, ResourceServer, SubjectTokens } from './auth/index.js';
import { IdMinter, MemoryEraMemo, MemoryGrants, RedisEraMemo, ReplicaAsks, ReplicaRelay, SignInCallback, TransportMemo, type UpstreamSessionClient } from './upstream/index.js';
import { AskRounds, MemoryFacts, RedisFacts } from './translate/index.js';
import { cacheHintOf, upstreamParts, type UpstreamParts } from './upstream-parts.js';
import { mountParts } from './mount-parts.js';
import { createRedisClient, createStore, redisConnection, SessionPool, upstreamOf, type SessionStore } from './pool/index.js';
import { RedisBus } from './bus/index.js';
import { globToRegExp } from './glob.js';
import { MemoryTaskStore, RedisTaskStore, TaskBridge } from './tasks/index.js';
import { Handoff, HeldCalls, serveHandedRounds, StateSealer, type BridgeDeps, type ReplicaBridge } from './mrtr/index.js';
import { randomUUID } from 'node:crypto';
import type { Federation, ModernDeps } from './routing/index.js';
import { crossReplicaListen, InProcessSessionEventBus, Subscriptions, tapped } from './subscriptions/index.js';
import { VERSION } from './version.js';

const FEDERATION_CHECK_WAIT_MS = 10_000;
/** Longest start-up waits for its pub/sub subscriptions; with Redis away they are made once it answers. */
const SUBSCRIBE_WAIT_MS = 2_000;

/** Whether `p` settles within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([p.then(() => true, () => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]);
  clearTimeout(timer);
  return settled;
}

export interface App {
  listen(): Promise<AddressInfo>;
  /** Graceful stop in phases (ingress/drain.ts): readyz fails, serving goes on for drain.delayMs, then the listener closes and in-flight work finishes. */
  drain(): Promise<void>;
  /** URL of the first mount once listening. */
  readonly url: string | undefined;
  /** scheme://host:port of the data port once listening; mounts are paths under it. */
  readonly origin: string | undefined;
  /** Origin of the admin port (/metrics, /healthz, /readyz) once listening; undefined when disabled. */
  readonly adminUrl: string | undefined;
  /** Mount path -> the upstreams it serves. */
  readonly mounts: Readonly<Record<string, string[]>>;
}

export function createApp(config: Config, log: Logger, store: SessionStore = createStore(config, log.child({ stage: 'store' }))): App {
  const { topology, problems } = resolveTopology(config);
  if (problems.length > 0) throw new ConfigError([...problems]);
  const federations: Federation[] = [];
  // Probes are read at scrape time, when held, subscriptions and federations exist.
  const metrics = createMetrics({
    pendingCalls: () => held.size,
    listenStreams: () => subscriptions.size,
    tasksFollowed: () => tasks.followedCount,
    federationConflicts: () => federations.map((f) => [f.path, f.conflictCount]),
    openConnections: () => ingress.openConnections,
    inFlight: () => inFlight.count,
    pooledSessions: () => {
      const counts = pool.sizeByUpstream();
      return topology.upstreams.map((u): [string, number] => [u.name, counts.get(u.name) ?? 0]);
    },
    storeUp: () => pool.storeUp,
    cacheBytes: () => gatewayCache?.bytesBy() ?? [],
  }, { version: VERSION });
  const requestMetrics = new RequestMetrics(metrics);
  const storeMetrics = new StoreMetrics(metrics);

  const replicaId = randomUUID();
  // With a shared store, a stdio or HTTP+SSE session (a process or a connection in one replica)
  // is reached from every replica: operations on another replica's session go to it over the bus.
  const relayBus =
    config.store.kind === 'redis' && topology.upstreams.some((u) => u.transport !== 'streamable-http')
      ? new RedisBus(createRedisClient(redisConnection(config.store)))
      : undefined;
  const relays: ReplicaRelay[] = [];
  const startRelay = (relay: ReplicaRelay) =>
    relay.start().catch((err: unknown) => {
      log.warn({ err }, 'cannot take requests for this replica\'s stdio or HTTP+SSE sessions; other replicas will open their own');
    });
  // An auto upstream's relay is made when its transport is found, which may be after listen().
  let relaysStarted = false;
  // Requests this replica is serving, its own and those handed here: a drain waits for them.
  const inFlight = { count: 0 };
  const reachable = (name: string, client: UpstreamSessionClient): UpstreamSessionClient => {
    if (!relayBus) return client;
    const relay = new ReplicaRelay(name, client, relayBus, replicaId, config.store.keyPrefix, log.child({ stage: 'relay', upstream: name }), { inFlight });
    relays.push(relay);
    if (relaysStarted) void startRelay(relay);
    return relay;
  };
  const upstreams = new Map<string, UpstreamParts>();
  // Shared by the upstreams: each URL of an auto upstream is probed once.
  const transports = new TransportMemo();
  // The clients' own tokens, kept for the upstreams that exchange them for theirs.
  const subjects = topology.upstreams.some((u) => u.credentials?.grant === 'token_exchange')
    ? new SubjectTokens()
    : undefined;
  // Seals requestState, and the users' sign-in states and upstream tokens.
  const sealer = new StateSealer(config.mrtr.stateKeys);
  const grants = store.shared?.grants ?? new MemoryGrants();
  // With a shared store, an ask on a session's GET stream may be for a call on another replica.
  const replicaAsks = config.store.kind === 'redis' ? new ReplicaAsks(replicaId, config.store.keyPrefix, 1_000, log.child({ stage: 'asks' })) : undefined;
  // Legacy clients of modern upstreams: their sessions' facts and eras in the shared store, their asks' answers from any replica.
  const redis = store.shared?.client;
  const eras = redis ? new RedisEraMemo(redis, config.store.keyPrefix) : new MemoryEraMemo();
  const faceFacts = redis ? new RedisFacts(redis, config.store.keyPrefix, config.store.idleTtlMs) : new MemoryFacts(config.store.idleTtlMs);
  const rounds = new AskRounds(replicaId, config.store.keyPrefix, 1_000, log.child({ stage: 'legacy-face' }));
  // The gateway cache: discover, lists and reads kept per replica, the public ones in Redis too when asked.
  const gatewayCache =
    config.cache.maxBytes > 0
      ? new GatewayCache({
          maxBytes: config.cache.maxBytes,
          replicaId,
          keyPrefix: config.store.keyPrefix,
          ...(config.cache.store === 'redis' && redis ? { shared: new RedisTier(redis, config.store.keyPrefix) } : {}),
          recorder: new CacheMetrics(metrics),
          log: log.child({ stage: 'cache' }),
        })
      : undefined;
  const shared = { reachable, transports, subjects, sealer, grants, replicaAsks, eras, faceFacts, rounds, cache: gatewayCache };
  for (const spec of topology.upstreams) upstreams.set(spec.name, upstreamParts(spec, config, metrics, log, shared));
  const signIns = new Map([...upstreams].flatMap(([name, parts]) => (parts.signIn ? [[name, parts.signIn] as const] : [])));
  const signInCallback = signIns.size > 0 ? new SignInCallback(config.auth.callbackUrl, config.auth.clientMetadataUrl, sealer, signIns) : undefined;
  const partsOf = (name: string) => upstreams.get(name)!;
  const pool = new SessionPool(
    store,
    new Map([...upstreams].map(([name, u]) => [name, { client: u.client, protocolVersion: u.spec.protocolVersion }])),
    {
      clientInfo: { name: 'causeway', version: VERSION },
      idleTtlMs: config.store.idleTtlMs,
      maxSessions: config.store.maxSessions,
      lockTtlMs: Math.min(Math.max(...topology.upstreams.map((u) => u.requestTimeoutMs)), 15_000),
      touchIntervalMs: 5_000,
    },
    log.child({ stage: 'pool' }),
    {
      onInitialize: (upstream, ms, reason) => partsOf(upstream).metrics.initialized(reason, ms / 1000),
      onHit: (upstream) => partsOf(upstream).metrics.poolLookup('hit'),
      onMiss: (upstream) => partsOf(upstream).metrics.poolLookup('miss'),
      onStoreError: (op) => storeMetrics.storeError(op),
      onLocalSession: (upstream) => partsOf(upstream).metrics.localSession(),
      onAdopted: (session): Promise<void> => subscriptions.stand(session),
      onReplaced: (key) => gatewayCache?.replaced(key.upstream, key.id),
    },
  );
  const ids = new IdMinter();
  const held = new HeldCalls(config.mrtr.maxPending, config.mrtr.maxPendingPerPrincipal);
  // With a shared store, a retry may land on any replica: hand it to the one holding its call.
  const handoff =
    config.store.kind === 'redis'
      ? new Handoff(
          new RedisBus(createRedisClient(redisConnection(config.store))),
          replicaId,
          config.store.keyPrefix,
          1_000,
          log.child({ stage: 'handoff' }),
        )
      : undefined;
  // With a shared store, listen works across replicas: change notifications travel over Redis
  // pub/sub, one replica holds each session's GET stream, subscriptions are counted in Redis.
  const crossReplica =
    config.store.kind === 'redis'
      ? crossReplicaListen(
          createRedisClient(redisConnection(config.store)),
          {
            keyPrefix: config.store.keyPrefix,
            replicaId,
            takeoverMs: config.subscriptions.takeoverMs,
            onStale: (keyId, method) => {
              if (keyId !== undefined) pool.peek(keyId)?.facts.invalidate(method);
              else for (const s of pool.pooled()) s.facts.invalidate(method);
            },
          },
          log.child({ stage: 'subscriptions' }),
        )
      : undefined;
  const sessionEvents = crossReplica?.bus ?? new InProcessSessionEventBus(log.child({ stage: 'subscriptions' }));
  // Every change an upstream session tells of, on whichever stream, drops what the gateway cache kept of it.
  const heardEvents = gatewayCache ? tapped(sessionEvents, (keyId, n) => upstreams.get(upstreamOf(keyId))?.cache?.changed(n)) : sessionEvents;
  // The names one replica's lists taught it, offered to the others (metrics labels).
  const catalog =
    crossReplica && redis
      ? new NameCatalog({
          redis,
          bus: crossReplica.messages,
          keyPrefix: config.store.keyPrefix,
          replicaId,
          offer: (upstream, method, items) => upstreams.get(upstream)?.metrics.names.offer(method, items) ?? [],
          log: log.child({ stage: 'cache' }),
        })
      : undefined;
  if (catalog) for (const [name, u] of upstreams) u.metrics.onLearned = (method, items) => catalog.learned(name, method, items);

  const subscriptions = new Subscriptions(
    {
      pool,
      clientOf: (upstream) => partsOf(upstream).client,
      standingOf: (upstream) => partsOf(upstream).spec.standingStream,
      ids,
      bus: heardEvents,
      coordinator: crossReplica?.coordinator,
      log: log.child({ stage: 'subscriptions' }),
    },
    {
      maxListeners: config.subscriptions.maxListeners,
      maxPerPrincipal: config.subscriptions.maxPerPrincipal,
      keepAliveMs: config.subscriptions.keepAliveMs,
      maxUrisPerListen: config.subscriptions.maxUrisPerListen,
      standWaitMs: Math.max(...topology.upstreams.map((u) => u.connectTimeoutMs)),
    },
  );

  // Tasks live in the store beside the sessions, so any replica answers for a task.
  const tasks = new TaskBridge(
    {
      store: store.shared ? new RedisTaskStore(store.shared.client, config.store.keyPrefix) : new MemoryTaskStore(),
      pool,
      ids,
      clientOf: (upstream) => partsOf(upstream).client,
      announce: (principal, n) => subscriptions.publishTask(principal, n),
      log: log.child({ stage: 'tasks' }),
    },
    {
      ttlMs: config.tasks.ttlMs,
      maxFollowed: config.tasks.maxFollowed,
      maxFollowedPerPrincipal: config.tasks.maxFollowedPerPrincipal,
      heartbeatMs: config.tasks.heartbeatMs,
      firstAskMs: config.tasks.firstAskMs,
    },
  );

  const replicaBridge: ReplicaBridge = {
    replicaId,
    handoff,
    ids,
    held,
    sealer,
    collectWindowMs: config.mrtr.collectWindowMs,
    stateTtlMs: config.mrtr.stateTtlMs,
  };
  // The pipeline's view of each upstream.
  const modern = new Map<string, ModernDeps>();
  for (const [name, u] of upstreams) {
    const bridge: BridgeDeps = {
      ...replicaBridge,
      client: u.client,
      upstreamTimeoutMs: u.spec.requestTimeoutMs,
      onRetry: (method, via) => u.metrics.retry(method, via),
    };
    modern.set(name, {
      upstreamName: name,
      client: u.client,
      pool,
      ids,
      forward: u.forward,
      cacheHint: cacheHintOf(u.spec.cache),
      bridge,
      subscriptions,
      metrics: u.metrics,
      tasks,
      taskTools: u.spec.taskTools.map(globToRegExp),
      taskSupport: u.spec.taskSupport,
      ...(u.modern ? { modern: u.modern } : {}),
      ...(u.cache ? { cache: u.cache } : {}),
    });
  }
  // A round handed over from another replica finds its held call by id, whatever its upstream.
  const handedRounds = { ...replicaBridge, upstreamTimeoutMs: Math.max(...topology.upstreams.map((u) => u.requestTimeoutMs)) };

  // Each mount: its upstream, or the federation of its upstreams, and its skills folder in front.
  const face = {
    facts: faceFacts,
    rounds,
    keepAliveMs: config.subscriptions.keepAliveMs,
    maxResponseBytes: Math.max(...topology.upstreams.map((u) => u.maxResponseBytes)),
  };
  const mountCtx = { modern, partsOf, metrics, subscriptions, cache: config.cache, federations, face, log };
  const { mounts, folders } = mountParts(topology.mounts, mountCtx);
  const authMetrics = new AuthMetrics(metrics);
  const auth =
    config.auth.mode === 'none'
      ? undefined
      : new ResourceServer(config.auth, topology.mounts.map((m) => m.path), (reason) => authMetrics.failure(reason), replayCacheFor(store), { subjects, principal: config.principal });
  let draining = false;
  let closing = false;
  // A replica that never reached its shared store shares nothing: not ready, so a Redis URL typo shows.
  const notReady = () => (draining ? 'draining' : store.notReady?.());
  const ingress = createIngress(
    {
      host: config.listen.host,
      port: config.listen.port,
      tlsCertFile: config.listen.tlsCertFile,
      tlsKeyFile: config.listen.tlsKeyFile,
      maxHeaderBytes: config.limits.maxHeaderBytes,
      maxConcurrentStreams: config.limits.maxConcurrentStreams,
      headersTimeoutMs: config.limits.headersTimeoutMs,
      idleTimeoutMs: config.limits.idleTimeoutMs,
      maxConnections: config.limits.maxConnections,
    },
    frontDoor({
      mounts,
      maxHeaderBytes: config.limits.maxHeaderBytes,
      maxInFlight: config.limits.maxInFlight,
      body: { maxBytes: config.limits.maxBodyBytes, timeoutMs: config.limits.bodyTimeoutMs },
      json: { maxDepth: config.limits.maxJsonDepth, maxItems: config.limits.maxJsonItems },
      origin: originPolicy(config.listen.host, config.security.allowedHosts, config.security.allowedOrigins),
      auth,
      signIn: signInCallback,
      principal: config.principal,
      rate:
        config.limits.ratePerSecond > 0 || Object.keys(config.limits.rateMethods).length > 0
          ? new RateLimiter(
              {
                ratePerSecond: config.limits.ratePerSecond,
                burst: burstOf(config.limits.ratePerSecond, config.limits.rateBurst),
                methods: new Map(Object.entries(config.limits.rateMethods).map(([m, r]) => [m, { ratePerSecond: r.ratePerSecond, burst: burstOf(r.ratePerSecond, r.burst) }])),
              },
              store,
              log.child({ stage: 'rate' }),
            )
          : undefined,
      log,
      notReady,
      closing: () => closing,
      observe: (tag, status, seconds) => requestMetrics.request(tag.era, tag.method, status, tag.revision, seconds),
      accessSample: config.log.accessSample,
      audit: config.log.audit,
      inFlight,
    }),
    (reason) => metrics.connectionsClosed.labels(reason).inc(),
  );

  const admin =
    config.admin.port < 0
      ? undefined
      : createAdmin(
          { host: config.admin.host, port: config.admin.port },
          {
            notReady,
            metrics: async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }),
            log: log.child({ stage: 'admin' }),
          },
        );

  let url: string | undefined;
  let origin: string | undefined;
  let adminUrl: string | undefined;
  return {
    get url() {
      return url;
    },
    get origin() {
      return origin;
    },
    get adminUrl() {
      return adminUrl;
    },
    mounts: Object.fromEntries(topology.mounts.map((m) => [m.path, m.upstreams])),
    async listen() {
      const serveHanded = serveHandedRounds(handedRounds);
      // A round handed here is a request in flight like any other: a drain waits for it before it
      // lets go of its held calls, so the replica that forwarded it is not left without a reply.
      const counted: typeof serveHanded = async (round) => {
        inFlight.count++;
        try {
          return await serveHanded(round);
        } finally {
          inFlight.count--;
        }
      };
      // Subscriptions wait for Redis (the bus makes them once it answers): start-up waits a little for them, never for good.
      const serving = handoff?.serve(counted).catch((err: unknown) => {
        log.warn({ err }, 'cannot receive handed-over retries; retries landing elsewhere will replay');
      });
      await crossReplica?.start();
      // Not awaited past a bound: with Redis away at start-up, other replicas' invalidations and names are heard once it is back.
      const heard = Promise.all([
        gatewayCache?.start(crossReplica?.messages).catch((err: unknown) => log.warn({ err }, 'cannot hear the other replicas\' cache invalidations yet')),
        catalog?.start(topology.upstreams.map((u) => u.name)).catch((err: unknown) => log.warn({ err }, 'cannot read the names other replicas learned yet')),
      ]);
      await settlesWithin(heard, SUBSCRIBE_WAIT_MS);
      // Not awaited: with Redis away at start-up its subscriptions wait for it; meanwhile asks go to this replica's calls.
      if (crossReplica && replicaAsks) {
        void replicaAsks.start(crossReplica.messages).catch((err: unknown) => {
          log.warn({ err }, 'cannot ask the other replicas for the calls of outside asks; they go to this replica\'s calls only');
        });
      }
      if (crossReplica) {
        void rounds.start(crossReplica.messages).catch((err: unknown) => {
          log.warn({ err }, 'cannot hear answers to legacy clients\' asks from other replicas yet');
        });
      }
      relaysStarted = true;
      const started = Promise.all([serving, ...relays.map(startRelay)]);
      if (!(await settlesWithin(started, SUBSCRIBE_WAIT_MS))) {
        log.warn('Redis pub/sub not reachable yet: handed-over retries and other replicas\' requests are taken once it is');
      }
      await Promise.all(folders.map((f) => f.start()));
      // Name conflicts between federated upstreams are reported before traffic arrives, unless a
      // slow upstream would hold start-up past FEDERATION_CHECK_WAIT_MS: then they are reported when found.
      const checked = Promise.all(federations.map((f) => f.check()));
      await Promise.race([checked, new Promise((r) => setTimeout(r, FEDERATION_CHECK_WAIT_MS).unref())]);
      if (admin) {
        const a = await admin.listen();
        adminUrl = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
      }
      const addr = await ingress.listen().catch(async (err: unknown) => {
        await admin?.close();
        throw err;
      });
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      origin = `${ingress.protocol}://${host}:${addr.port}`;
      url = `${origin}${topology.mounts[0]!.path}`;
      return addr;
    },
    async drain() {
      if (draining) return;
      draining = true;
      await drain(
        {
          ingress,
          inFlight,
          markClosing: () => {
            closing = true;
            log.info({ inFlight: inFlight.count }, 'listener closed; finishing the requests in flight');
          },
          // Listen streams never finish on their own: end them with the closing result [SUBS].
          closeStreams: async (timeoutMs) => {
            await subscriptions.close(timeoutMs);
            for (const u of upstreams.values()) {
              u.passthrough.endStreams?.();
              u.modern?.listens.endAll();
            }
            for (const m of mounts.values()) if (m.federation) m.passthrough.endStreams?.();
            await sessionEvents.close();
          },
          // With a shared store another replica can resume a held call on its upstream stream: let go, do not cancel.
          cancelHeld: () => {
            tasks.detachAll();
            if (config.store.kind === 'redis') held.detachAll();
            else held.cancelAll();
          },
          release: [
            // Calls still running until now may have had asks handed to them from other replicas.
            async () => {
              await replicaAsks?.close();
              await rounds.close();
              await crossReplica?.close();
            },
            async () => handoff?.close(),
            async () => {
              await gatewayCache?.close();
              await catalog?.close();
            },
            () => pool.close(),
            () => store.close(),
            () => Promise.allSettled([...upstreams.values()].map((u) => u.close())),
            async () => relayBus?.close(),
            async () => folders.forEach((f) => f.close()),
          ],
          admin,
        },
        config.drain,
      );
    },
  };
}

/** A bucket's size: as configured, else the rate rounded up (at least 1). */
function burstOf(ratePerSecond: number, burst: number | undefined): number {
  return burst || Math.max(1, Math.ceil(ratePerSecond));
}
