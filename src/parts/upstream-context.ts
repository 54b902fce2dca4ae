// What an upstream's parts are, and what building them takes: the app's shared pieces, one
// upstream's context (its spec, metrics, forward policy, credentials), and the cache hints and
// round limit the upstream and mount parts both use.

import type { CachePolicy, Config, UpstreamSpec } from '../config/index.js';
import type { CacheHint } from '../dialect/index.js';
import type { Logger } from '../log.js';
import type { GatewayCache, UpstreamCache } from '../cache/index.js';
import type { UpstreamMetrics } from '../metrics/index.js';
import type { LegacyFace, SessionBinding } from '../passthrough/index.js';
import type { AskRounds, FactsStore } from '../translate/index.js';
import type { ModernSide } from '../routing/index.js';
import type {
  EraMemo,
  ForwardPolicy,
  GrantStore,
  OutsideAskers,
  ReplicaAsks,
  Sealer,
  SubjectSource,
  TargetSet,
  TransportMemo,
  UpstreamAuthorization,
  UpstreamClient,
  UpstreamHttp,
  UpstreamSessionClient,
  UpstreamSignIn,
} from '../upstream/index.js';

export interface UpstreamParts {
  spec: UpstreamSpec;
  client: UpstreamSessionClient;
  /**
   * What serves legacy clients: the byte passthrough, or for a stdio or HTTP+SSE upstream
   * Causeway's own legacy face.
   */
  passthrough: LegacyFace;
  forward: ForwardPolicy;
  metrics: UpstreamMetrics;
  /** The users' sign-in at this upstream, when it wants their own token (grant authorization_code). */
  signIn?: UpstreamSignIn;
  /** Closes the client and the passthrough, letting their requests finish, then the HTTP client they share. */
  close(): Promise<void>;
  /** A Streamable HTTP upstream may speak 2026-07-28: its era, and the client of its modern side. */
  modern?: ModernSide;
  /** The gateway cache of this upstream's discover, lists and reads (cache.maxBytes > 0). */
  cache?: UpstreamCache;
  /** A Streamable HTTP upstream's own session client, for the calls the warm lane sends through it. */
  direct?: UpstreamClient;
  /** An HTTP upstream's URLs and their health (the status page). */
  targets?: TargetSet;
  /** An auto upstream's transport, once found. */
  found?(): string | undefined;
}

/** What the app shares among its upstreams. */
export interface Shared {
  /** Makes a replica's own stdio or HTTP+SSE client reach sessions on other replicas too. */
  reachable(name: string, client: UpstreamSessionClient): UpstreamSessionClient;
  transports: TransportMemo;
  /** The clients' tokens, for upstreams whose credential is an exchange of them. */
  subjects: SubjectSource | undefined;
  /** Seals sign-in states and the users' upstream tokens; the grant store keeps those. */
  sealer: Sealer;
  grants: GrantStore;
  /** With replicas sharing sessions: asks on a GET stream held here, for calls on other replicas. */
  replicaAsks: ReplicaAsks | undefined;
  /** Which upstreams were seen asking outside a call. */
  askers: OutsideAskers;
  /** The eras found, shared by the replicas. */
  eras: EraMemo;
  /** The legacy sessions Causeway keeps for legacy clients of modern upstreams, and the asks of their calls. */
  faceFacts: FactsStore;
  rounds: AskRounds;
  /** The gateway cache, when on (cache.maxBytes > 0). */
  cache: GatewayCache | undefined;
}

/** What builds one upstream's parts: its spec and settings, and what the app shares among upstreams. */
export interface UpstreamContext {
  spec: UpstreamSpec;
  config: Config;
  metrics: UpstreamMetrics;
  log: Logger;
  /** The app's log, for the legacy faces' own child. */
  rootLog: Logger;
  forward: ForwardPolicy;
  binding: SessionBinding | undefined;
  reachable: Shared['reachable'];
  replicaAsks: Shared['replicaAsks'];
  credentials: UpstreamAuthorization | undefined;
  cache?: UpstreamCache;
  shared: Shared;
}

/** An HTTP upstream's context: its URLs and the one HTTP client for them. */
export interface HttpContext extends UpstreamContext {
  targets: TargetSet;
  http: UpstreamHttp;
}

/** input_required rounds one legacy client's call may take through the translated face. */
export const MAX_ROUNDS = 32;

/** The cache hints of an upstream's cache.* policy, by method (a legacy upstream gives none itself). */
export function cacheHintOf(cache: CachePolicy): (method: string) => CacheHint {
  return (method) => {
    const o = cache.methods[method];
    return { ttlMs: o?.ttlMs ?? cache.ttlMs, cacheScope: o?.scope ?? cache.scope };
  };
}
