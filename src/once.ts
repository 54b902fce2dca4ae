// Things a replica says once each (a Host it refused): remembered in a bounded set, the oldest
// forgotten first, so a client sending a new name on each request costs no memory past the bound.

export class OnceEach {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  /** True the first time `key` is seen (again after it was forgotten). */
  first(key: string): boolean {
    if (this.seen.has(key)) return false;
    if (this.seen.size >= this.max) this.seen.delete(this.seen.values().next().value!);
    this.seen.add(key);
    return true;
  }
}
