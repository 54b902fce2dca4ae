// The subscriptions/listen streams relayed to modern upstreams on this replica, so a drain can
// end them.

/** A drain ends them with the closing result [SUBS] instead of waiting for clients that never leave. */
export class RelayedListens {
  private readonly open = new Set<AbortController>();

  get size(): number {
    return this.open.size;
  }

  /** A controller the drain aborts; forget it once the stream ends. */
  add(): AbortController {
    const c = new AbortController();
    this.open.add(c);
    return c;
  }

  forget(c: AbortController): void {
    this.open.delete(c);
  }

  endAll(): void {
    for (const c of this.open) c.abort(new Error('draining'));
  }
}
