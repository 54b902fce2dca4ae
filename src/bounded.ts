// Bounded memories: a map or a set that forgets its oldest entry when a new one would take it past
// its bound, so that what clients can make a replica remember (names, tokens, ids) costs no memory
// past the bound. One class for every memo, replay cache and catalog that keeps entries this way.

/** A Map of at most `max` entries; setting a new key past the bound forgets the oldest first. */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly max: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (this.size >= this.max && !this.has(key)) this.delete(this.keys().next().value!);
    return super.set(key, value);
  }

  /** The entry of `key`, made the newest (least recently used forgotten first); undefined when absent. */
  use(key: K): V | undefined {
    if (!this.has(key)) return undefined;
    const value = this.get(key)!;
    this.delete(key);
    super.set(key, value);
    return value;
  }
}

/** Things a replica says once each (a Host it refused): true the first time a key is seen, again once forgotten. */
export class OnceEach {
  private readonly seen: BoundedMap<string, true>;

  constructor(max: number) {
    this.seen = new BoundedMap(max);
  }

  first(key: string): boolean {
    if (this.seen.has(key)) return false;
    this.seen.set(key, true);
    return true;
  }
}
