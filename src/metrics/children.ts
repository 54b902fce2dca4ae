// A metric's labelled children, cached by their label values in nested maps: once a combination
// has been seen, recording it allocates nothing (no label object, no hash string). Label values
// come from bounded sets, so the cache is bounded too.

type Node = Map<string, unknown>;

export class Children<C> {
  private readonly root: Node = new Map();

  /** `make` gets the values in labelNames order, only the first time a combination is seen. */
  constructor(private readonly make: (values: string[]) => C) {}

  /** Values in labelNames order; every call for one metric passes the same number of them. */
  get(a: string, b?: string, c?: string, d?: string, e?: string): C {
    // The values are a path down the maps: every one but the last a branch, the last the child's key.
    let node = this.root;
    if (b !== undefined) node = branch(node, a);
    if (c !== undefined) node = branch(node, b!);
    if (d !== undefined) node = branch(node, c!);
    if (e !== undefined) node = branch(node, d!);
    const key = e ?? d ?? c ?? b ?? a;
    let child = node.get(key) as C | undefined;
    if (child === undefined) {
      const values = [a, b, c, d, e].filter((v): v is string => v !== undefined);
      child = this.make(values);
      node.set(key, child);
    }
    return child;
  }
}

function branch(node: Node, key: string): Node {
  let next = node.get(key) as Node | undefined;
  if (next === undefined) {
    next = new Map();
    node.set(key, next);
  }
  return next;
}
