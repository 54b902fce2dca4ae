// The order the parts start and stop in, as data: the registry (registry.ts) runs the steps the
// parts registered in this order, and the app shows its close steps (App.shutdownOrder).

import type { Config, Topology } from '../config/index.js';
import type { Logger } from '../log.js';
import type { Order, Parts } from './registry.js';

/** Longest start-up waits for its pub/sub subscriptions; with Redis away they are made once it answers. */
const SUBSCRIBE_WAIT_MS = 2_000;
/**
 * Name conflicts between federated upstreams are reported before traffic arrives, unless a slow
 * upstream would hold start-up past this: then they are reported when found.
 */
const FEDERATION_CHECK_WAIT_MS = 10_000;

export const ORDER = {
  start: [
    { name: 'cross-replica' },
    // Other replicas' invalidations and names are heard once Redis is back, if it is away now.
    { name: 'replica-news', waitMs: SUBSCRIBE_WAIT_MS },
    // Meanwhile asks go to this replica's calls only.
    { name: 'replica-asks', waitMs: 0 },
    { name: 'rounds', waitMs: 0 },
    {
      name: 'replica-requests',
      waitMs: SUBSCRIBE_WAIT_MS,
      slow: "Redis pub/sub not reachable yet: handed-over retries and other replicas' requests are taken once it is",
    },
    { name: 'skills' },
    { name: 'federations', waitMs: FEDERATION_CHECK_WAIT_MS },
    { name: 'admin' },
    { name: 'ingress' },
  ],
  endStreams: ['subscriptions', 'upstreams', 'mounts', 'session-events'],
  // Tasks first: a followed task's call may be a held one.
  letGo: ['tasks', 'held'],
  close: [
    // Calls still running until now may have had asks handed to them from other replicas; the
    // bus those arrive on closes after the asks and the rounds.
    'replica-asks',
    'rounds',
    'cross-replica',
    'handoff',
    'cache',
    'catalog',
    // The pool ends its sessions through the store and the upstream clients: both close after it.
    'pool',
    'store',
    'upstreams',
    // The relays of the upstreams' stdio and HTTP+SSE sessions use this bus until those close.
    'relay-bus',
    'skills',
  ],
} as const satisfies Order<string, string, string, string>;

type Names<T extends readonly unknown[]> = T[number];
export type StartName = Names<typeof ORDER.start>['name'];
export type StreamName = Names<typeof ORDER.endStreams>;
export type LetGoName = Names<typeof ORDER.letGo>;
export type CloseName = Names<typeof ORDER.close>;

export type AppParts = Parts<StartName, StreamName, LetGoName, CloseName>;

/** What every part is built from. */
export interface Ground {
  parts: AppParts;
  config: Config;
  topology: Topology;
  /** This replica's id among those sharing the store. */
  replicaId: string;
  /** Requests this replica is serving, its own and those handed here: a drain waits for them. */
  inFlight: { count: number };
  log: Logger;
}
