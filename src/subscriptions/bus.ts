// The session event bus: every change notification an upstream session sends, on whichever
// stream it arrived, is published under that session's pool key and delivered to every
// subscriber of the key. InProcessSessionEventBus serves one replica; a pub/sub bus (one Redis
// channel per key, subscribed while the key has listeners here) implements the same interface
// for many.

import type { JsonRpcNotification } from '../jsonrpc.js';
import type { Logger } from '../log.js';

export type SessionEventHandler = (n: JsonRpcNotification) => void;

export interface SessionEventBus {
  /** Delivers `n` to the key's subscribers (on every replica, for a shared bus). Never rejects for a missing subscriber. */
  publish(key: string, n: JsonRpcNotification): Promise<void>;
  /**
   * Resolves once events published for `key` reach `handler`; the function returned undoes it.
   * `onGap`: events for the key may have been missed (a shared bus's subscription was down for a while).
   */
  subscribe(key: string, handler: SessionEventHandler, onGap?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export class InProcessSessionEventBus implements SessionEventBus {
  private readonly handlers = new Map<string, Set<SessionEventHandler>>();

  constructor(private readonly log?: Logger) {}

  publish(key: string, n: JsonRpcNotification): Promise<void> {
    for (const h of [...(this.handlers.get(key) ?? [])]) {
      try {
        h(n);
      } catch (err) {
        this.log?.error({ err, method: n.method }, 'session event handler threw');
      }
    }
    return Promise.resolve();
  }

  subscribe(key: string, handler: SessionEventHandler): Promise<() => Promise<void>> {
    let set = this.handlers.get(key);
    if (!set) this.handlers.set(key, (set = new Set()));
    set.add(handler);
    return Promise.resolve(() => {
      const s = this.handlers.get(key);
      s?.delete(handler);
      if (s?.size === 0) this.handlers.delete(key);
      return Promise.resolve();
    });
  }

  /** Keys with at least one subscriber (for tests and diagnostics). */
  get keys(): number {
    return this.handlers.size;
  }

  close(): Promise<void> {
    this.handlers.clear();
    return Promise.resolve();
  }
}

/** The bus with `tap` told of every event published on it, before it is delivered (the gateway cache hears changes so). */
export function tapped(bus: SessionEventBus, tap: (key: string, n: JsonRpcNotification) => void): SessionEventBus {
  return {
    publish(key, n) {
      tap(key, n);
      return bus.publish(key, n);
    },
    subscribe: (key, handler, onGap) => bus.subscribe(key, handler, onGap),
    close: () => bus.close(),
  };
}
