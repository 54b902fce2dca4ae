// What a modern request is while it is served, and what serving it needs: the exchange the
// front door hands to the pipeline and the stages fill in (its access-log notes, what it was
// answered with), and the dependencies of one upstream. Types only; they live on the routing
// floor so that routing, which passes exchanges on to the pipeline's stages, need not import the
// pipeline.

import type { CacheHint } from '../dialect/index.js';
import type { HttpResponse } from '../egress/index.js';
import type { HeaderBag, ModernRequest } from '../envelope/index.js';
import type { Logger } from '../log.js';
import type { SessionPool } from '../pool/index.js';
import type {
  ForwardPolicy,
  IdMinter,
  ModernClient,
  RelayedListens,
  UpstreamEra,
  UpstreamSessionClient,
} from '../upstream/index.js';
import type { BridgeDeps } from '../mrtr/index.js';
import type { UpstreamMetrics } from '../metrics/index.js';
import type { Subscriptions } from '../subscriptions/index.js';
import type { ListLens } from '../view/index.js';
import type { UpstreamCache } from '../cache/index.js';
import type { Span } from '../tracing/index.js';
import type { TaskBridge } from '../tasks/index.js';

/** The 2026-07-28 side of an upstream that may speak it: its era, and the client of that side. */
export interface ModernSide {
  era: UpstreamEra;
  client: ModernClient;
  maxResponseBytes: number;
  listens: RelayedListens;
  cache?: UpstreamCache;
}

export interface ModernDeps {
  upstreamName: string;
  bridge: BridgeDeps;
  client: UpstreamSessionClient;
  pool: SessionPool;
  ids: IdMinter;
  /** The client headers this upstream gets. */
  forward: ForwardPolicy;
  /** subscriptions/listen, and the sink for change notifications seen on call streams. */
  subscriptions: Subscriptions;
  cacheHint(method: string): CacheHint;
  /** Learns the upstream's tool / prompt / template names; records each answer once. */
  metrics: UpstreamMetrics;
  /** The tasks extension: the upstream's own tasks, and calls held as tasks. */
  tasks: TaskBridge;
  /** upstream.taskTools: the tools Causeway runs as tasks itself. */
  taskTools: readonly RegExp[];
  /** upstream.taskSupport: where the upstream runs no tasks, its tools' own taskSupport makes them tasks held here. */
  taskSupport: boolean;
  /** An upstream that may speak 2026-07-28: its era, and the client a modern client's requests are relayed through. */
  modern?: ModernSide;
  /** The gateway cache of this upstream's discover, lists and reads (cache.maxBytes > 0). */
  cache?: UpstreamCache;
}

/** What a request was answered with, for its metric: set by the stage that answered. */
export type Answered = 'complete' | 'input_required' | 'task' | 'upstream_error';

/** What the access log line of a request says beyond the front door's view; filled by the stages that know. */
export interface AccessNotes {
  upstream?: string;
  /** The JSON-RPC error code the client got, if any. */
  code?: number;
  /** The pooled upstream session was opened for this request, or one already open was used. */
  session?: 'opened' | 'reused';
  resultType?: string;
  /** The round a multi-round retry answers (1 for the retry after the first input_required); absent otherwise. */
  round?: number;
  traceId?: string;
  /** The gateway cache answered (hit), or was asked and could not (miss); absent for what it never keeps. */
  cache?: 'hit' | 'miss';
  /** The warm lane served it: a call on a warm session, sent and answered on one straight path. */
  warm?: boolean;
}

export interface ModernExchange {
  request: ModernRequest;
  headers: HeaderBag;
  res: HttpResponse;
  /** Aborted when the client goes away before the answer. */
  signal: AbortSignal;
  log: Logger;
  /** What lists show this request: its token's grant (auth.rules), its mount's view, or both; none: everything. */
  access?: ListLens;
  /** Who asks: the principal hash (auth/principal.ts), worked out once at the front door. */
  principal: string;
  /** The request's server span, when tracing records it. */
  span?: Span;
  /** Filled for the access log, when the front door keeps one. */
  notes?: AccessNotes;
  /** The name the client used, when the mount's view renamed or hid it: what the metrics label it. */
  shownName?: string;
  /** The body as the client sent it: relayed as it is to a modern upstream. */
  body?: Uint8Array;
}
