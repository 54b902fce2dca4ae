// What the warm lane works with: the request as the front door holds it, the way back to the
// pipeline, and the upstream it sends to.

import type { Access } from '../auth/index.js';
import type { Deadlines } from '../deadlines.js';
import type { HttpResponse } from '../egress/index.js';
import type { HeaderBag } from '../envelope/index.js';
import type { Logger } from '../log.js';
import type { AccessNotes, ModernDeps } from '../routing/index.js';
import type { UpstreamClient } from '../upstream/index.js';

/** What the lane needs of the request as the front door holds it (its Visit). */
export interface WarmExchange {
  readonly res: HttpResponse;
  readonly headers: HeaderBag;
  /** Who asks: the principal hash. */
  readonly principal: string;
  readonly access: Access | undefined;
  readonly tag: { notes: AccessNotes };
  readonly log: Logger;
  /** Made on first use: only a call that asks the client something needs one. */
  readonly signal: AbortSignal;
  /** The client went before the answer. */
  readonly gone: boolean;
  /** Set while a call runs: told once if the client goes before the answer. */
  goneTo: { clientGone(): void } | undefined;
}

/** Serves the request the pipeline's way, for a request the lane hands back before anything was sent. */
export type Fallback<X> = (ex: X) => Promise<void>;

/** The upstream a lane sends to: the pipeline's view of it, and its Streamable HTTP session client. */
export interface WarmUpstream {
  readonly deps: ModernDeps;
  readonly client: UpstreamClient;
  /** Its calls' deadlines: each the upstream's request timeout after it is sent. */
  readonly deadlines: Deadlines;
}
