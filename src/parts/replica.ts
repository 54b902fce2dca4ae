// The bridges between replicas that share a Redis store, each registering its own start and
// close: the session events and stream coordination (cross-replica listen), asks for calls held
// on another replica, answers to legacy clients' asks, requests for this replica's stdio and
// HTTP+SSE sessions (relays), and retries handed to the replica holding their call. With a
// memory store there is no other replica: each gives its local stand-in, or nothing.

import { RedisBus, type MessageBus } from '../bus/index.js';
import { Handoff, HeldCalls, serveHandedRounds, type ReplicaBridge } from '../mrtr/index.js';
import { createRedisClient, redisConnection } from '../pool/index.js';
import { crossReplicaListen, InProcessSessionEventBus, type CrossReplicaListen } from '../subscriptions/index.js';
import type { SessionEventBus } from '../subscriptions/index.js';
import { AskRounds } from '../translate/index.js';
import { OutsideAskers, ReplicaAsks, ReplicaRelay, type UpstreamSessionClient } from '../upstream/index.js';
import type { SessionStore } from '../pool/index.js';
import type { Ground } from './registry.js';

/**
 * With a shared store, listen works across replicas: change notifications travel over Redis
 * pub/sub, one replica holds each session's GET stream, subscriptions are counted in Redis.
 */
export function crossReplicaPart(
  { parts, config, replicaId, log }: Ground,
  onStale: (keyId: string | undefined, method: string) => void,
): { crossReplica: CrossReplicaListen | undefined; events: SessionEventBus } {
  const subscriptionsLog = log.child({ stage: 'subscriptions' });
  const crossReplica =
    config.store.kind === 'redis'
      ? crossReplicaListen(
          createRedisClient(redisConnection(config.store)),
          { keyPrefix: config.store.keyPrefix, replicaId, takeoverMs: config.subscriptions.takeoverMs, onStale },
          subscriptionsLog,
        )
      : undefined;
  const events = crossReplica?.bus ?? new InProcessSessionEventBus(subscriptionsLog);
  if (crossReplica) {
    parts.onStart('cross-replica', () => crossReplica.start());
    parts.onClose('cross-replica', () => crossReplica.close());
  }
  parts.onEndStreams('session-events', () => events.close());
  return { crossReplica, events };
}

/** A bridge that hears the other replicas over the cross-replica bus, once there is one. */
interface OnBus {
  start(bus: MessageBus): Promise<void>;
  close(): Promise<void>;
}

/** Starts `bridge` on the cross-replica bus without holding start-up for it, and closes it in its step. */
function onBus<B extends OnBus>(
  ground: Ground,
  step: 'replica-asks' | 'rounds',
  bridge: B,
  bus: Bus,
  warning: string,
): B {
  const { parts, log } = ground;
  if (bus) parts.onStart(step, () => bridge.start(bus.messages).catch((err: unknown) => log.warn({ err }, warning)));
  parts.onClose(step, () => bridge.close());
  return bridge;
}

type Bus = CrossReplicaListen | undefined;

/** With a shared store, an ask on a session's GET stream may be for a call on another replica. */
export function replicaAsksPart(ground: Ground, bus: Bus): ReplicaAsks | undefined {
  const { config, replicaId, log } = ground;
  if (config.store.kind !== 'redis') return undefined;
  const asks = new ReplicaAsks(replicaId, config.store.keyPrefix, 1_000, log.child({ stage: 'asks' }));
  const warning = "cannot ask the other replicas for the calls of outside asks; they go to this replica's calls only";
  return onBus(ground, 'replica-asks', asks, bus, warning);
}

/**
 * Which upstreams ask outside a call: learned on any replica, kept in Redis and told to the others
 * (upstream/replicas/outside-askers.ts); with a memory store, this replica's own knowledge.
 */
export function askersPart(ground: Ground, store: SessionStore, bus: Bus): OutsideAskers {
  const { parts, config, topology, replicaId, log } = ground;
  const redis = store.shared?.client;
  const asksLog = log.child({ stage: 'asks' });
  const shared =
    bus && redis ? { redis, bus: bus.messages, keyPrefix: config.store.keyPrefix, replicaId, log: asksLog } : undefined;
  const askers = new OutsideAskers(shared);
  askers.onLearned((upstream) => asksLog.info({ upstream }, 'the upstream asks outside a call'));
  const names = topology.upstreams.map((u) => u.name);
  const warning = 'cannot read which upstreams the other replicas saw asking outside a call yet';
  if (shared) {
    parts.onStart('replica-news', () => askers.start(names).catch((err: unknown) => log.warn({ err }, warning)));
    parts.onClose('catalog', () => askers.close());
  }
  return askers;
}

/** Legacy clients of modern upstreams: their asks' answers, from any replica once heard over the bus. */
export function roundsPart(ground: Ground, bus: Bus): AskRounds {
  const { config, replicaId, log } = ground;
  const rounds = new AskRounds(replicaId, config.store.keyPrefix, 1_000, log.child({ stage: 'legacy-face' }));
  return onBus(ground, 'rounds', rounds, bus, "cannot hear answers to legacy clients' asks from other replicas yet");
}

/**
 * With a shared store, a stdio or HTTP+SSE session (a process or a connection in one replica) is
 * reached from every replica: operations on another replica's session go to it over the bus. The
 * function returned makes an upstream's own client reachable so; an auto upstream's relay is made
 * when its transport is found, which may be after start-up.
 */
export function relayPart({ parts, config, topology, replicaId, inFlight, log }: Ground) {
  const needed = config.store.kind === 'redis' && topology.upstreams.some((u) => u.transport !== 'streamable-http');
  if (!needed) return (_name: string, client: UpstreamSessionClient): UpstreamSessionClient => client;
  const bus = new RedisBus(createRedisClient(redisConnection(config.store)));
  const relays: ReplicaRelay[] = [];
  let started = false;
  const start = (relay: ReplicaRelay) =>
    relay.start().catch((err: unknown) => {
      const warning =
        "cannot take requests for this replica's stdio or HTTP+SSE sessions; other replicas will open their own";
      log.warn({ err }, warning);
    });
  parts.onStart('replica-requests', () => {
    started = true;
    return Promise.all(relays.map(start));
  });
  parts.onClose('relay-bus', () => bus.close());
  return (name: string, client: UpstreamSessionClient): UpstreamSessionClient => {
    const relayLog = log.child({ stage: 'relay', upstream: name });
    const relay = new ReplicaRelay(name, client, bus, replicaId, config.store.keyPrefix, relayLog, { inFlight });
    relays.push(relay);
    if (started) void start(relay);
    return relay;
  };
}

/**
 * Multi-round calls held between rounds, and with a shared store the handoff that brings a retry
 * landing on another replica to the one holding its call.
 */
export function heldPart(
  { parts, config, topology, replicaId, inFlight, log }: Ground,
  bridge: Omit<ReplicaBridge, 'replicaId' | 'handoff' | 'held' | 'collectWindowMs' | 'stateTtlMs'>,
): ReplicaBridge {
  const held = new HeldCalls(config.mrtr);
  // With a shared store another replica can resume a held call on its upstream stream: let go, do not cancel.
  parts.onLetGo('held', () => (config.store.kind === 'redis' ? held.detachAll() : held.cancelAll()));
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
  const replicaBridge: ReplicaBridge = {
    ...bridge,
    replicaId,
    handoff,
    held,
    collectWindowMs: config.mrtr.collectWindowMs,
    stateTtlMs: config.mrtr.stateTtlMs,
  };
  if (!handoff) return replicaBridge;
  // A round handed over from another replica finds its held call by id, whatever its upstream.
  const upstreamTimeoutMs = Math.max(...topology.upstreams.map((u) => u.requestTimeoutMs));
  const serveHanded = serveHandedRounds({ ...replicaBridge, upstreamTimeoutMs });
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
  parts.onStart('replica-requests', () =>
    handoff.serve(counted).catch((err: unknown) => {
      log.warn({ err }, 'cannot receive handed-over retries; retries landing elsewhere will replay');
    }),
  );
  parts.onClose('handoff', () => handoff.close());
  return replicaBridge;
}
