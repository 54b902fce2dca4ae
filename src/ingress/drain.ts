// Graceful stop (SIGTERM), in phases. /readyz already answers 503 (on both ports) when this
// starts.
// 1. For delayMs Causeway accepts and serves as usual: a load balancer keeps sending until it has
//    seen the readiness change, and nothing it sends in that time is refused.
// 2. The listener closes; HTTP/2 sessions get GOAWAY and every HTTP/1.1 answer carries
//    Connection: close, so clients take their next request elsewhere; listen streams end with
//    their closing result. Requests on connections still open are served.
// 3. Up to timeoutMs, wait for the requests in flight, and then for QUIET_MS without a new one.
//    Only then are idle HTTP/1.1 connections closed: a client (a balancer with connections kept
//    alive) may be writing its next request on one, and closing it then would lose that request,
//    so they are closed once no request has come for a while. Requests that arrived meanwhile
//    are waited for again; then everything left is cut, and held multi-round calls are let go
//    (shared store: another replica resumes them) or cancelled (memory store).
// 4. Release what the replica holds (handoff bus, pool, store, upstream clients), one step after
//    the other in the order the composition root gives (parts/registry.ts); close the admin port
//    last, so the drain itself can be scraped.

import type { Ingress } from './server.js';

export interface DrainParts {
  ingress: Pick<Ingress, 'stopAccepting' | 'closeConnections'>;
  inFlight: { readonly count: number };
  /** Phase 2 has begun: HTTP/1.1 answers close their connection from now on. */
  markClosing(): void;
  /** Ends the long-lived streams with their closing result, waiting up to timeoutMs. */
  closeStreams(timeoutMs: number): Promise<void>;
  /** Cancels the upstream calls held between multi-round rounds. */
  cancelHeld(): void;
  /** Closed one after the other, once no request is left. */
  release: ReadonlyArray<() => Promise<unknown>>;
  admin: { close(): Promise<void> } | undefined;
}

export interface DrainTimes {
  delayMs: number;
  timeoutMs: number;
}

const POLL_MS = 25;
/** How long no request may arrive before idle connections are closed. */
const QUIET_MS = 250;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function drain(parts: DrainParts, times: DrainTimes): Promise<void> {
  try {
    if (times.delayMs > 0) await sleep(times.delayMs);
    parts.ingress.stopAccepting();
    parts.markClosing();
    parts.ingress.closeConnections('goaway');
    const deadline = Date.now() + times.timeoutMs;
    await parts.closeStreams(times.timeoutMs);
    const settled = async () => {
      while (parts.inFlight.count > 0 && Date.now() < deadline) await sleep(POLL_MS);
    };
    let quietSince = Date.now();
    while (Date.now() < deadline) {
      if (parts.inFlight.count > 0) {
        await settled();
        quietSince = Date.now();
      } else if (Date.now() - quietSince >= QUIET_MS) break;
      else await sleep(POLL_MS);
    }
    parts.ingress.closeConnections('idle');
    await settled();
    parts.ingress.closeConnections('all');
    parts.cancelHeld();
    for (const release of parts.release) await release();
  } finally {
    await parts.admin?.close();
  }
}
