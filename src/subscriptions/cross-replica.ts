// The pieces that make subscriptions/listen work across replicas sharing a Redis store, built on
// one Redis connection of their own (plus the pub/sub connection RedisBus duplicates from it):
// the shared session event bus, this replica's liveness (one beat per replica, whatever the
// number of sessions) and the coordinator of GET-stream leases and subscription counts.

import type { Cluster, Redis } from 'ioredis';
import { RedisBus, ReplicaLiveness, type MessageBus } from '../bus/index.js';
import type { Logger } from '../log.js';
import { DEFAULT_TAKEOVER_MS, heartbeatMs } from './coordination.js';
import { RedisListenCoordinator } from './redis-coordination.js';
import { SharedSessionEventBus } from './bus.js';

export interface CrossReplicaOptions {
  /** store.keyPrefix */
  keyPrefix: string;
  replicaId: string;
  /**
   * subscriptions.takeoverMs: a replica not heard of for this long has lapsed; each states itself three times as often.
   */
  takeoverMs?: number;
  /**
   * Another replica saw `method`, a change that makes part of the key's session facts stale (every key's when
   * undefined: such news may have been missed).
   */
  onStale: (keyId: string | undefined, method: string) => void;
}

export interface CrossReplicaListen {
  bus: SharedSessionEventBus;
  /** The pub/sub underneath, for other messages about sessions' streams (replica-asks.ts). */
  messages: MessageBus;
  coordinator: RedisListenCoordinator;
  liveness: ReplicaLiveness;
  /** Waits (bounded) for Redis and starts hearing session facts invalidations. */
  start(): Promise<void>;
  close(): Promise<void>;
}

const WAIT_MS = 2_000;

export function crossReplicaListen(
  client: Redis | Cluster,
  opts: CrossReplicaOptions,
  log: Logger,
): CrossReplicaListen {
  client.on('error', () => undefined);
  const messages = new RedisBus(client);
  const bus = new SharedSessionEventBus(
    messages,
    { keyPrefix: opts.keyPrefix, replicaId: opts.replicaId, subscribeTimeoutMs: WAIT_MS, onStale: opts.onStale },
    log,
  );
  const takeoverMs = opts.takeoverMs ?? DEFAULT_TAKEOVER_MS;
  const liveness = new ReplicaLiveness(
    client,
    { key: `${opts.keyPrefix}replicas`, replicaId: opts.replicaId, ttlMs: takeoverMs, beatMs: heartbeatMs(takeoverMs) },
    log,
  );
  const coordinator = new RedisListenCoordinator(client, liveness, { keyPrefix: opts.keyPrefix }, log);
  return {
    bus,
    messages,
    coordinator,
    liveness,
    async start() {
      if (!(await ready(client, WAIT_MS)))
        log.warn('redis not reachable yet for cross-replica listen; channels act alone until it is');
      await liveness.start();
      await bus.start();
    },
    async close() {
      await liveness.close();
      await bus.close();
      await messages.close();
      const quit = client.status === 'ready' ? client.quit().catch(() => undefined) : undefined;
      await Promise.race([quit, new Promise((r) => setTimeout(r, 1000).unref())]);
      client.disconnect();
    },
  };
}

function ready(client: Redis | Cluster, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    client.on('ready', onReady);
  });
}
