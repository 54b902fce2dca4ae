// The work a session client has in flight, and whether it takes more: open, closing (new calls
// refused, one-way sends still go so calls in flight can finish) or closed. The HTTP and the
// channel clients share it, so they close the same way.

import { CausewayError } from '../../errors.js';
import { InFlight } from '../../in-flight.js';
import type { JsonRpcResponse } from '../../jsonrpc.js';

export type WorkState = 'open' | 'closing' | 'closed';

export class Work {
  private readonly inflight = new InFlight<Promise<unknown>>();
  state: WorkState = 'open';

  /** Runs `fn` as work in flight; new work is refused once closing, any work once closed. */
  track<T>(isNewWork: boolean, fn: () => Promise<T>): Promise<T> {
    if (this.state === 'closed' || (isNewWork && this.state === 'closing')) {
      return Promise.reject(new CausewayError('upstream_unavailable', 'Upstream client is closed'));
    }
    return this.register(fn());
  }

  /** Counts `p` as in flight until it settles. */
  register<T>(p: Promise<T>): Promise<T> {
    const entry = this.inflight.add(p);
    const forget = (): void => {
      this.inflight.delete(entry);
    };
    p.then(forget, forget);
    return p;
  }

  /** New work is refused from now on; one-way sends still go. */
  refuseNew(): void {
    if (this.state === 'open') this.state = 'closing';
  }

  /** Refuses new work, then waits for what is in flight (what it starts meanwhile included). */
  async settle(): Promise<void> {
    this.refuseNew();
    while (this.inflight.size > 0) await Promise.allSettled(this.inflight.values());
  }
}

/**
 * How an upstream request ended, for its metric: answered, answered with an error, failed, or given up by the caller.
 */
export type RequestResult = 'ok' | 'error' | 'failed' | 'cancelled';

/** A request's deadline and cancellation: what a failure becomes, and the timers let go of once it ends. */
export interface RequestScope {
  settle(err: unknown): unknown;
  dispose(): void;
}

/**
 * Runs one upstream request in its scope: a failure is what the scope makes of it (its deadline,
 * the caller's abort), and `ended` hears how it ended and how long it took, whatever the outcome.
 */
export async function timedRequest(
  signal: AbortSignal | undefined,
  scope: RequestScope,
  run: () => Promise<JsonRpcResponse>,
  ended: (result: RequestResult, seconds: number) => void,
): Promise<JsonRpcResponse> {
  const started = performance.now();
  let result: RequestResult = 'failed';
  try {
    const response = await run();
    result = 'error' in response ? 'error' : 'ok';
    return response;
  } catch (err) {
    if (signal?.aborted) result = 'cancelled';
    throw scope.settle(err);
  } finally {
    scope.dispose();
    ended(result, (performance.now() - started) / 1000);
  }
}
