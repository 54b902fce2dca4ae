// Composition root: builds each stage once from the Config and wires them together. No logic.

import type { AddressInfo } from 'node:net';
import type { Config } from './config/schema.js';
import type { CacheHint } from './dialect/results.js';
import { originPolicy } from './envelope/index.js';
import { createAdmin } from './ingress/admin.js';
import { frontDoor } from './ingress/front-door.js';
import { createIngress } from './ingress/server.js';
import type { Logger } from './log.js';
import { createMetrics, RequestMetrics, UpstreamMetrics } from './metrics/index.js';
import { LegacyPassthrough } from './passthrough/legacy.js';
import { createRedisClient, createStore, redisConnection, SessionPool, type SessionStore } from './pool/index.js';
import { RedisBus } from './bus/message-bus.js';
import { Handoff } from './mrtr/handoff.js';
import { serveHandedRounds, type BridgeDeps } from './mrtr/bridge.js';
import { randomUUID } from 'node:crypto';
import { IdMinter } from './upstream/ids.js';
import { HeldCalls } from './mrtr/holder.js';
import { StateSealer } from './mrtr/request-state.js';
import { UpstreamClient } from './upstream/legacy-client.js';
import { crossReplicaListen, InProcessSessionEventBus, Subscriptions } from './subscriptions/index.js';

export const VERSION = '0.1.0';

export interface App {
  listen(): Promise<AddressInfo>;
  /** Graceful stop: readyz fails, new requests get 503, in-flight ones finish (up to drain.timeoutMs). */
  drain(): Promise<void>;
  readonly url: string | undefined;
  /** Origin of the admin port (/metrics, /healthz, /readyz) once listening; undefined when disabled. */
  readonly adminUrl: string | undefined;
}

export function createApp(config: Config, log: Logger, store: SessionStore = createStore(config, log.child({ stage: 'store' }))): App {
  // Probes are read at scrape time, when held and subscriptions exist.
  const metrics = createMetrics({ pendingCalls: () => held.size, listenStreams: () => subscriptions.size });
  const upstreamName = config.upstream.name;
  const requestMetrics = new RequestMetrics(metrics);
  const upstreamMetrics = new UpstreamMetrics(metrics, upstreamName);
  const client = new UpstreamClient(
    {
      name: upstreamName,
      url: config.upstream.url,
      headers: config.upstream.headers,
      connectTimeoutMs: config.upstream.connectTimeoutMs,
      requestTimeoutMs: config.upstream.requestTimeoutMs,
      maxResponseBytes: config.upstream.maxResponseBytes,
    },
    log.child({ stage: 'upstream', upstream: upstreamName }),
    { onRequest: (method, result, seconds) => upstreamMetrics.upstreamCall(method, result, seconds) },
  );
  const pool = new SessionPool(
    store,
    client,
    {
      protocolVersion: config.upstream.protocolVersion,
      clientInfo: { name: 'causeway', version: VERSION },
      idleTtlMs: config.store.idleTtlMs,
      maxSessions: config.store.maxSessions,
      lockTtlMs: Math.min(config.upstream.requestTimeoutMs, 15_000),
      touchIntervalMs: 5_000,
    },
    log.child({ stage: 'pool', upstream: upstreamName }),
    {
      onInitialize: (ms, reason) => upstreamMetrics.initialized(reason, ms / 1000),
      onHit: () => upstreamMetrics.poolLookup('hit'),
      onMiss: () => upstreamMetrics.poolLookup('miss'),
      onStoreError: (op) => upstreamMetrics.storeError(op),
      onLocalSession: () => upstreamMetrics.localSession(),
    },
  );
  const passthrough = new LegacyPassthrough(
    {
      url: config.upstream.url,
      headers: config.upstream.headers,
      connectTimeoutMs: config.upstream.connectTimeoutMs,
      requestTimeoutMs: config.upstream.requestTimeoutMs,
    },
    log.child({ stage: 'passthrough' }),
  );
  const cacheHint = (method: string): CacheHint => {
    const o = config.cache.methods[method];
    return { ttlMs: o?.ttlMs ?? config.cache.ttlMs, cacheScope: o?.scope ?? config.cache.scope };
  };

  const ids = new IdMinter();
  const held = new HeldCalls(config.mrtr.maxPending, config.mrtr.maxPendingPerPrincipal);
  const replicaId = randomUUID();
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
  const bridge: BridgeDeps = {
    replicaId,
    handoff,
    client,
    ids,
    held,
    sealer: new StateSealer(config.mrtr.stateKeys),
    collectWindowMs: config.mrtr.collectWindowMs,
    stateTtlMs: config.mrtr.stateTtlMs,
    upstreamTimeoutMs: config.upstream.requestTimeoutMs,
    onRetry: (method, via) => upstreamMetrics.retry(method, via),
  };
  // With a shared store, listen works across replicas: change notifications travel over Redis
  // pub/sub, one replica holds each session's GET stream, subscriptions are counted in Redis.
  const crossReplica =
    config.store.kind === 'redis'
      ? crossReplicaListen(
          createRedisClient(redisConnection(config.store)),
          {
            keyPrefix: config.store.keyPrefix,
            replicaId,
            keepAliveMs: config.subscriptions.keepAliveMs,
            onStale: (keyId, slots) => slots.forEach((slot) => pool.peek(keyId)?.memo.delete(slot)),
          },
          log.child({ stage: 'subscriptions' }),
        )
      : undefined;
  const sessionEvents = crossReplica?.bus ?? new InProcessSessionEventBus(log.child({ stage: 'subscriptions' }));
  const subscriptions = new Subscriptions(
    { pool, client, ids, bus: sessionEvents, coordinator: crossReplica?.coordinator, log: log.child({ stage: 'subscriptions' }) },
    {
      maxListeners: config.subscriptions.maxListeners,
      maxPerPrincipal: config.subscriptions.maxPerPrincipal,
      keepAliveMs: config.subscriptions.keepAliveMs,
      maxUrisPerListen: config.subscriptions.maxUrisPerListen,
    },
  );
  let draining = false;
  const inFlight = { count: 0 };
  const ingress = createIngress(
    {
      host: config.listen.host,
      port: config.listen.port,
      tlsCertFile: config.listen.tlsCertFile,
      tlsKeyFile: config.listen.tlsKeyFile,
      maxHeaderBytes: config.limits.maxHeaderBytes,
      maxConcurrentStreams: config.limits.maxConcurrentStreams,
      bodyTimeoutMs: config.limits.bodyTimeoutMs,
    },
    frontDoor({
      path: config.listen.path,
      maxHeaderBytes: config.limits.maxHeaderBytes,
      maxInFlight: config.limits.maxInFlight,
      body: { maxBytes: config.limits.maxBodyBytes, timeoutMs: config.limits.bodyTimeoutMs },
      origin: originPolicy(config.listen.host, config.security.allowedHosts, config.security.allowedOrigins),
      passthrough,
      modern: {
        upstreamName,
        client,
        pool,
        ids,
        principal: config.principal,
        cacheHint,
        bridge,
        subscriptions,
        metrics: upstreamMetrics,
      },
      log,
      ready: () => !draining,
      draining: () => draining,
      observe: (s) => requestMetrics.request(s.era, s.method, s.status, s.revision, s.seconds),
      inFlight,
    }),
  );

  const admin =
    config.admin.port < 0
      ? undefined
      : createAdmin(
          { host: config.admin.host, port: config.admin.port },
          {
            ready: () => !draining,
            metrics: async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }),
            log: log.child({ stage: 'admin' }),
          },
        );

  let url: string | undefined;
  let adminUrl: string | undefined;
  return {
    get url() {
      return url;
    },
    get adminUrl() {
      return adminUrl;
    },
    async listen() {
      await handoff?.serve(serveHandedRounds(bridge)).catch((err: unknown) => {
        log.warn({ err }, 'cannot receive handed-over retries yet; retries landing elsewhere will replay');
      });
      await crossReplica?.start();
      if (admin) {
        const a = await admin.listen();
        adminUrl = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
      }
      const addr = await ingress.listen().catch(async (err: unknown) => {
        await admin?.close();
        throw err;
      });
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      url = `${ingress.protocol}://${host}:${addr.port}${config.listen.path}`;
      return addr;
    },
    async drain() {
      if (draining) return;
      draining = true;
      try {
        ingress.stopAccepting();
        ingress.closeConnections(false);
        const deadline = Date.now() + config.drain.timeoutMs;
        // Listen streams never finish on their own: end them with the closing result [SUBS].
        await subscriptions.close(config.drain.timeoutMs);
        await sessionEvents.close();
        await crossReplica?.close();
        while (inFlight.count > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
        ingress.closeConnections(true);
        held.cancelAll();
        await handoff?.close();
        await pool.close();
        await store.close();
        await Promise.allSettled([client.close(), passthrough.close()]);
      } finally {
        // Last, so the drain itself can be scraped.
        await admin?.close();
      }
    },
  };
}
