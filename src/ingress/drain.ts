// Graceful stop (SIGTERM), in this order: stop accepting and close idle connections (/readyz
// already answers 503, new requests on open connections get 503 draining); end the streams that
// never finish by themselves (listen) with their closing result; wait up to drain.timeoutMs for
// the requests in flight; cut what is left and cancel held multi-round calls; release what the
// replica holds (handoff bus, pool, store, upstream clients); close the admin port last, so the
// drain itself can be scraped.

import type { Ingress } from './server.js';

export interface DrainParts {
  ingress: Pick<Ingress, 'stopAccepting' | 'closeConnections'>;
  inFlight: { readonly count: number };
  /** Ends the long-lived streams with their closing result, waiting up to timeoutMs. */
  closeStreams(timeoutMs: number): Promise<void>;
  /** Cancels the upstream calls held between multi-round rounds. */
  cancelHeld(): void;
  /** Closed one after the other, once no request is left. */
  release: ReadonlyArray<() => Promise<unknown>>;
  admin: { close(): Promise<void> } | undefined;
}

const POLL_MS = 25;

export async function drain(parts: DrainParts, timeoutMs: number): Promise<void> {
  try {
    parts.ingress.stopAccepting();
    parts.ingress.closeConnections(false);
    const deadline = Date.now() + timeoutMs;
    await parts.closeStreams(timeoutMs);
    while (parts.inFlight.count > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, POLL_MS));
    parts.ingress.closeConnections(true);
    parts.cancelHeld();
    for (const release of parts.release) await release();
  } finally {
    await parts.admin?.close();
  }
}
