// The work a session client has in flight, and whether it takes more: open, closing (new calls
// refused, one-way sends still go so calls in flight can finish) or closed. The HTTP and the
// channel clients share it, so they close the same way.

import { CausewayError } from '../../errors.js';
import { InFlight } from '../../in-flight.js';

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
