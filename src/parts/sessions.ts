// The upstream sessions and what lives on them, each part with its own close or drain step: the
// pool of sessions, the listen streams (subscriptions) over their change notifications, the tasks
// followed on them, and the pipeline's view of each upstream that brings them together.

import type { GatewayCache } from '../cache/index.js';
import { globToRegExp } from '../glob.js';
import { CountsBy, type Metrics } from '../metrics/index.js';
import type { BridgeDeps, ReplicaBridge } from '../mrtr/index.js';
import { SessionPool, upstreamOf, type PooledSession, type SessionStore } from '../pool/index.js';
import { isObject } from '../jsonrpc.js';
import { readTools, type ModernDeps } from '../routing/index.js';
import {
  Subscriptions,
  tapped,
  type CrossReplicaListen,
  type SessionEventBus,
  type StandingPolicy,
} from '../subscriptions/index.js';
import { MemoryTaskStore, RedisTaskStore, TaskBridge } from '../tasks/index.js';
import type { IdMinter, OutsideAskers, UpstreamSessionClient } from '../upstream/index.js';
import { VERSION } from '../version.js';
import type { Ground } from './registry.js';
import { cacheHintOf, type UpstreamParts } from './upstream-context.js';

type UpstreamMap = ReadonlyMap<string, UpstreamParts>;

const partsOf = (upstreams: UpstreamMap, name: string) => upstreams.get(name)!;

export function poolPart(
  { parts, config, topology, log }: Ground,
  store: SessionStore,
  upstreams: UpstreamMap,
  metrics: Metrics,
  on: { adopted(session: Parameters<Subscriptions['stand']>[0]): Promise<void>; cache: GatewayCache | undefined },
): SessionPool {
  const storeErrors = new CountsBy(metrics.storeErrors);
  const of = (upstream: string) => partsOf(upstreams, upstream).metrics;
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
      onInitialize: (upstream, ms, reason) => of(upstream).initialized(reason, ms / 1000),
      onHit: (upstream) => of(upstream).poolLookup('hit'),
      onMiss: (upstream) => of(upstream).poolLookup('miss'),
      onStoreError: (op) => storeErrors.count(op),
      onLocalSession: (upstream) => of(upstream).localSession(),
      onAdopted: (session) => on.adopted(session),
      onReplaced: (key) => on.cache?.replaced(key.upstream, key.id),
    },
  );
  parts.onClose('pool', () => pool.close());
  return pool;
}

/** A change an upstream session tells of drops what the pooled session's facts say of it, here or on every one. */
export function staleFacts(pool: SessionPool, keyId: string | undefined, method: string): void {
  if (keyId !== undefined) pool.peek(keyId)?.facts.invalidate(method);
  else for (const s of pool.pooled()) s.facts.invalidate(method);
}

export function subscriptionsPart(
  { parts, config, topology, log }: Ground,
  deps: { pool: SessionPool; upstreams: UpstreamMap; ids: IdMinter; events: SessionEventBus; askers: OutsideAskers },
  crossReplica: CrossReplicaListen | undefined,
  cache: GatewayCache | undefined,
): Subscriptions {
  const { pool, upstreams, ids, events, askers } = deps;
  // Every change an upstream session tells of, on whichever stream, drops what the gateway cache kept of it.
  const heard = cache ? tapped(events, (keyId, n) => upstreams.get(upstreamOf(keyId))?.cache?.changed(n)) : events;
  const subscriptions = new Subscriptions(
    {
      pool,
      clientOf: (upstream) => partsOf(upstreams, upstream).client,
      standing: standingPolicy(upstreams, askers, ids, config.cache.keepMs),
      ids,
      bus: heard,
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
  askers.onLearned((upstream) => {
    upstreams.get(upstream)?.metrics.asksOutside();
    subscriptions.asksLearned();
  });
  // Listen streams never finish on their own: end them with the closing result [SUBS].
  parts.onEndStreams('subscriptions', (timeoutMs) => subscriptions.close(timeoutMs));
  return subscriptions;
}

/** Which GET streams are held with nobody listening, by upstream (subscriptions/standing.ts). */
function standingPolicy(upstreams: UpstreamMap, askers: OutsideAskers, ids: IdMinter, keepMs: number): StandingPolicy {
  return {
    standingOf: (upstream) => partsOf(upstreams, upstream).spec.standingStream,
    asksOutside: (upstream) => askers.has(upstream),
    // A token exchange or a user's sign-in needs a principal of the client's own.
    scoutable: (upstream) => {
      const grant = partsOf(upstreams, upstream).spec.credentials?.grant;
      return grant === undefined || grant === 'client_credentials';
    },
    listsKept: (upstream) => listsKept(partsOf(upstreams, upstream), keepMs),
    learnScout: (scout) => learnScoutTools(partsOf(upstreams, scout.key.upstream), ids, scout),
  };
}

/** The scout's tools into its facts, where the upstream has tools (pool/session-facts.ts). */
async function learnScoutTools(u: UpstreamParts, ids: IdMinter, scout: PooledSession): Promise<void> {
  const caps = scout.record.initializeResult.capabilities;
  if (isObject(caps) && isObject(caps.tools)) await readTools({ client: u.client, ids, metrics: u.metrics }, scout);
}

type ListsKept = { public: boolean; private: boolean };

/** Read once per upstream's parts (a reload builds new ones): the sweep asks for every pooled session. */
const keptOf = new WeakMap<UpstreamParts, ListsKept>();

/** The lists the gateway cache keeps of `u` past their ttlMs on a change's word (upstream-cache.ts), by scope. */
function listsKept(u: UpstreamParts, keepMs: number): ListsKept {
  let kept = keptOf.get(u);
  if (kept !== undefined) return kept;
  kept = { public: false, private: false };
  const hint = cacheHintOf(u.spec.cache);
  for (const method of LIST_METHODS) {
    const { ttlMs, cacheScope } = hint(method);
    if (u.cache !== undefined && ttlMs > 0 && keepMs > ttlMs) kept[cacheScope] = true;
  }
  keptOf.set(u, kept);
  return kept;
}

const LIST_METHODS = ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'] as const;

/** Tasks live in the store beside the sessions, so any replica answers for a task. */
export function tasksPart(
  { parts, config, log }: Ground,
  store: SessionStore,
  deps: { pool: SessionPool; upstreams: UpstreamMap; ids: IdMinter; subscriptions: Subscriptions },
): TaskBridge {
  const { pool, upstreams, ids, subscriptions } = deps;
  const tasks = new TaskBridge(
    {
      store: store.shared ? new RedisTaskStore(store.shared.client, config.store.keyPrefix) : new MemoryTaskStore(),
      pool,
      ids,
      clientOf: (upstream): UpstreamSessionClient => partsOf(upstreams, upstream).client,
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
  parts.onLetGo('tasks', () => tasks.detachAll());
  return tasks;
}

export type ModernContext = {
  pool: SessionPool;
  ids: IdMinter;
  bridge: ReplicaBridge;
  subscriptions: Subscriptions;
  tasks: TaskBridge;
};

/** The pipeline's view of each upstream. */
export function modernDeps(upstreams: UpstreamMap, deps: ModernContext): Map<string, ModernDeps> {
  return new Map([...upstreams].map(([name, u]) => [name, modernDepsOf(name, u, deps)]));
}

/** The pipeline's view of one upstream (a reload makes one for each upstream it adds). */
export function modernDepsOf(name: string, u: UpstreamParts, deps: ModernContext): ModernDeps {
  const { pool, ids, subscriptions, tasks } = deps;
  const bridge: BridgeDeps = {
    ...deps.bridge,
    client: u.client,
    upstreamTimeoutMs: u.spec.requestTimeoutMs,
    onRetry: (method, via) => u.metrics.retry(method, via),
  };
  return {
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
  };
}
