// Whether the shared session store is answering. Every store command the pool sends goes through
// run(): a failure is counted, logged once per outage and thrown as StoreUnavailable, and for
// retryMs after it the pool skips the store (usable() is false) instead of waiting on each
// request. The first success after an outage, or a reconnect the store reports, calls onBack.

import type { Logger } from '../log.js';
import type { SessionStore } from './store/index.js';
import { inStoreSpan } from '../tracing/index.js';

/** A store command failed; the pool falls back to replica-local sessions. */
export class StoreUnavailable extends Error {
  constructor(
    readonly op: string,
    cause: unknown,
  ) {
    super(`session store ${op} failed`, { cause });
    this.name = 'StoreUnavailable';
  }
}

export interface StoreHealthOptions {
  retryMs: number;
  onError?(op: string): void;
  onBack(): void;
}

export class StoreHealth {
  private up = true;
  private retryAt = 0;
  private probing = false;

  constructor(
    private readonly store: SessionStore,
    private readonly opts: StoreHealthOptions,
    private readonly log: Logger,
  ) {}

  get isUp(): boolean {
    return this.up;
  }

  /** True unless the store failed within retryMs. */
  usable(): boolean {
    return this.up || Date.now() >= this.retryAt;
  }

  async run<T>(op: string, fn: () => Promise<T>): Promise<T> {
    let value: T;
    try {
      // The memory store answers in-process: a span per map lookup would say nothing.
      value = await (this.store.kind === 'memory' ? fn() : inStoreSpan(op, this.store.kind, fn));
    } catch (err) {
      this.opts.onError?.(op);
      this.retryAt = Date.now() + this.opts.retryMs;
      if (this.up) {
        this.up = false;
        this.log.warn({ op, err }, 'session store unavailable; new sessions are replica-local until it answers again');
      } else {
        this.log.debug({ op, err }, 'session store still unavailable');
      }
      throw new StoreUnavailable(op, err);
    }
    if (!this.up) {
      this.up = true;
      this.log.info({ op }, 'session store answering again; sessions are shared again');
      this.opts.onBack();
    }
    return value;
  }

  /** The store's connection came back (a restarted Redis may have lost records). */
  reconnected(): void {
    this.log.info('session store reconnected; publishing this replica’s sessions');
    this.up = true;
    this.opts.onBack();
  }

  /** While down, one cheap command at a time finds out whether the store is back. */
  async probe(): Promise<void> {
    if (this.up || this.probing) return;
    this.probing = true;
    await this.run('probe', () => this.store.count())
      .catch(() => undefined)
      .finally(() => (this.probing = false));
  }
}
