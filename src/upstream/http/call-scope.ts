// One upstream call's cancellation: the caller's signal, the client's lifetime and an optional
// deadline merged into one AbortSignal, plus the rule that turns whatever was thrown into what the
// caller sees (the caller's own abort reason, upstream_timeout, or the transport error mapped).
//
// A call costs one AbortSignal: a caller that made a controller for this one call lends it
// (lendSignal) and the scope aborts that one instead of making its own; the client's lifetime is a
// ScopeSet that aborts the scopes it holds, rather than a signal each call listens to.

import { CausewayError } from '../../errors.js';
import { InFlight, type InFlightEntry } from '../../in-flight.js';
import { toUpstreamError } from '../core/index.js';

type Why = 'caller' | 'deadline' | 'lifetime';

const lent = new WeakMap<AbortSignal, AbortController>();

/** The signal of a controller made for one upstream call, which that call's scope may abort itself. */
export function lendSignal(controller: AbortController): AbortSignal {
  lent.set(controller.signal, controller);
  return controller.signal;
}

/** The scopes alive under one lifetime (a client, or its streams), aborted together when it ends. */
export class ScopeSet {
  private readonly live = new InFlight<CallScope>();
  private ended = false;

  /** Undefined when the lifetime has already ended. */
  add(scope: CallScope): InFlightEntry<CallScope> | undefined {
    return this.ended ? undefined : this.live.add(scope);
  }

  delete(entry: InFlightEntry<CallScope>): void {
    this.live.delete(entry);
  }

  end(): void {
    this.ended = true;
    for (const s of this.live.values()) s.endLifetime();
  }
}

export class CallScope {
  readonly signal: AbortSignal;
  private readonly controller: AbortController;
  private why: Why | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unlink: (() => void) | undefined;
  /** Where each lifetime holds this scope (undefined: it had ended), by the lifetime's index. */
  private readonly places: Array<InFlightEntry<CallScope> | undefined>;

  constructor(
    caller: AbortSignal | undefined,
    private readonly lifetimes: readonly ScopeSet[],
    timeoutMs: number | undefined,
  ) {
    const borrowed = caller === undefined ? undefined : lent.get(caller);
    this.controller = borrowed ?? new AbortController();
    this.signal = this.controller.signal;
    if (caller !== undefined && borrowed === undefined) this.link(caller);
    this.places = lifetimes.map((l) => l.add(this));
    if (this.places.includes(undefined)) this.abort('lifetime', undefined);
    if (timeoutMs !== undefined && !this.aborted)
      this.timer = setTimeout(() => this.abort('deadline', undefined), timeoutMs);
  }

  get aborted(): boolean {
    return this.signal.aborted;
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
    // A lent signal aborted by its owner is the caller's doing.
    switch (this.why ?? (this.signal.aborted ? 'caller' : undefined)) {
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
    clearTimeout(this.timer);
    this.unlink?.();
    this.unlink = undefined;
    for (let i = 0; i < this.lifetimes.length; i++) {
      const place = this.places[i];
      if (place !== undefined) this.lifetimes[i]!.delete(place);
    }
  }

  /** Called by the ScopeSet whose lifetime ended. */
  endLifetime(): void {
    this.abort('lifetime', undefined);
  }

  private link(source: AbortSignal): void {
    if (source.aborted) {
      this.abort('caller', source.reason);
      return;
    }
    const onAbort = (): void => this.abort('caller', source.reason);
    source.addEventListener('abort', onAbort, { once: true });
    this.unlink = () => source.removeEventListener('abort', onAbort);
  }

  private abort(why: Why, reason: unknown): void {
    if (this.signal.aborted) return;
    this.why = why;
    this.controller.abort(
      why === 'caller' ? reason : new CausewayError(why === 'deadline' ? 'upstream_timeout' : 'upstream_unavailable'),
    );
  }
}
