// Server->client requests that arrive on a session's standalone GET stream, outside any call's
// own stream. The legacy protocol does not say which call such an ask belongs to: it goes to the
// one multi-round call (tools/call, prompts/get, resources/read) in flight on the session, and
// with none or several it is refused at once, so the upstream's tool goes on without an answer
// rather than waiting out its own timeout. Only calls that can relay an ask are counted.

import type { Exchange } from './inbound.js';

/** Calls whose asks the multi-round bridge relays. */
export const ASKING_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

export class OutsideAsks {
  private readonly calls = new Map<string, Set<Exchange>>();

  /** Counts `ctx` as in flight on its session until the function returned is called; undefined when it cannot take asks. */
  enter(ctx: Exchange, method: string | undefined): (() => void) | undefined {
    const id = ctx.session.sessionId;
    if (id === undefined || ctx.handlers.onServerRequest === undefined || (method !== undefined && !ASKING_METHODS.has(method))) return undefined;
    let set = this.calls.get(id);
    if (!set) this.calls.set(id, (set = new Set()));
    set.add(ctx);
    return () => {
      set.delete(ctx);
      if (set.size === 0 && this.calls.get(id) === set) this.calls.delete(id);
    };
  }

  /** The only call on the session that can take an ask; undefined when there is none or more than one. */
  take(sessionId: string | undefined): Exchange | undefined {
    const set = sessionId === undefined ? undefined : this.calls.get(sessionId);
    if (set === undefined || set.size !== 1) return undefined;
    return set.values().next().value;
  }
}
