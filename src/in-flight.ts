// What is in flight under a long-lived owner (a client's calls, a server's connections): added
// and removed in constant time through the entry add() hands back, counted, and walked once when
// the owner ends them all.
//
// Not a Set or a Map. A hash table that lives long while its entries come and go with each
// request keeps what it held alive until the next full collection: each rehash leaves the old
// table pointing at its successor and still holding its entries, so once one table of that chain
// has been promoted to the old generation, every scavenge keeps the whole chain and every request
// the chain ever held, and promotes them in turn. On the warm path at 64 calls in flight this
// began with the first full collection, about 30 s into a run: the scavenger promoted 60-120 MB
// every 5 s instead of 3-5, and CPU per call went from about 120 to 250-300 us. An entry here is
// unlinked when it is removed and then holds nothing. (Measured alike: a Map keyed by numbers
// keeps what it held as a Set does; a plain object used as a dictionary keeps far less, its old
// tables not being chained (InFlightByKey, below); a WeakMap or a WeakSet keeps nothing.)

/** One value's place in an InFlight: what add() gives and delete() takes; its value is gone once removed. */
export interface InFlightEntry<T> {
  readonly value: T | undefined;
}

class Entry<T> implements InFlightEntry<T> {
  prev: Entry<T> | undefined = undefined;
  next: Entry<T> | undefined = undefined;

  constructor(
    public value: T | undefined,
    public owner: InFlight<T> | undefined,
  ) {}
}

export class InFlight<T> {
  private head: Entry<T> | undefined;
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(value: T): InFlightEntry<T> {
    const entry = new Entry<T>(value, this);
    const head = this.head;
    if (head !== undefined) {
      entry.next = head;
      head.prev = entry;
    }
    this.head = entry;
    this.count += 1;
    return entry;
  }

  /** Removes `entry` and forgets its value; false when it was not here (removed already, or another's). */
  delete(entry: InFlightEntry<T>): boolean {
    const e = entry as Entry<T>;
    if (e.owner !== this) return false;
    const { prev, next } = e;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next !== undefined) next.prev = prev;
    e.prev = e.next = e.value = e.owner = undefined;
    this.count -= 1;
    return true;
  }

  /** The newest value, if any. */
  first(): T | undefined {
    return this.head?.value;
  }

  /** The values now, newest first: a copy, so a caller may remove entries while it walks it. */
  values(): T[] {
    const out: T[] = [];
    for (let e = this.head; e !== undefined; e = e.next) out.push(e.value as T);
    return out;
  }
}

/**
 * What is in flight by a string key (a call's JSON-RPC id), where a Map would be the chain
 * above: a null-prototype object used as a dictionary. V8 rebuilds its table as keys come and
 * go too, but an old table points to no successor, so it keeps what it held for one full
 * collection at most, not every later request (test/in-flight.test.ts: about a twentieth of what
 * a Set keeps). values() gives insertion order, so no key may be an array index ("7"): prefix
 * numeric ids.
 */
export class InFlightByKey<V> {
  private readonly table = Object.create(null) as Record<string, V>;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    return this.table[key];
  }

  has(key: string): boolean {
    return key in this.table;
  }

  set(key: string, value: V): void {
    if (!(key in this.table)) this.count += 1;
    this.table[key] = value;
  }

  delete(key: string): boolean {
    if (!(key in this.table)) return false;
    delete this.table[key];
    this.count -= 1;
    return true;
  }

  /** The values now, oldest first: a copy. */
  values(): V[] {
    const out: V[] = [];
    for (const key in this.table) out.push(this.table[key]!);
    return out;
  }
}
