// One upstream call's cancellation: the caller's signal, the client's lifetime and an optional
// deadline merged into one AbortSignal, plus the rule that turns whatever was thrown into what the
// caller sees (the caller's own abort reason, upstream_timeout, or the transport error mapped).

import { CausewayError } from '../errors.js';
import { toUpstreamError } from './errors.js';

type Why = 'caller' | 'deadline' | 'lifetime';

export class CallScope {
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private readonly cleanups: (() => void)[] = [];
  private why: Why | undefined;

  constructor(caller: AbortSignal | undefined, lifetime: readonly AbortSignal[], timeoutMs: number | undefined) {
    this.signal = this.controller.signal;
    this.link(caller, 'caller');
    for (const s of lifetime) this.link(s, 'lifetime');
    if (timeoutMs !== undefined && this.why === undefined) {
      const timer = setTimeout(() => this.abort('deadline', undefined), timeoutMs);
      this.cleanups.push(() => clearTimeout(timer));
    }
  }

  get aborted(): boolean {
    return this.why !== undefined;
  }

  /** Resolves after `ms`, or rejects as soon as the scope is aborted. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.signal.aborted) {
        reject(this.signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(this.signal.reason);
      };
      const timer = setTimeout(() => {
        this.signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      this.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** The error the caller should see for `err`, given why (if at all) the scope was aborted. */
  settle(err: unknown): unknown {
    switch (this.why) {
      case 'caller':
        return this.signal.reason;
      case 'deadline':
        return new CausewayError('upstream_timeout', undefined, undefined, { cause: err });
      case 'lifetime':
        return new CausewayError('upstream_unavailable', 'Upstream client was shut down', undefined, {
          cause: err,
        });
      default:
        return toUpstreamError(err);
    }
  }

  dispose(): void {
    for (const fn of this.cleanups.splice(0)) fn();
  }

  private link(source: AbortSignal | undefined, why: Why): void {
    if (source === undefined) return;
    if (source.aborted) {
      this.abort(why, source.reason);
      return;
    }
    const onAbort = (): void => this.abort(why, source.reason);
    source.addEventListener('abort', onAbort, { once: true });
    this.cleanups.push(() => source.removeEventListener('abort', onAbort));
  }

  private abort(why: Why, reason: unknown): void {
    if (this.why !== undefined) return;
    this.why = why;
    this.controller.abort(
      why === 'caller' ? reason : new CausewayError(why === 'deadline' ? 'upstream_timeout' : 'upstream_unavailable'),
    );
  }
}
