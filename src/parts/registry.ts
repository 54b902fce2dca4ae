// The bookkeeping of the parts' lifecycles, and the order they start and stop in, as data (ORDER):
// the registry runs the steps the parts registered in that order, and the app shows its close
// steps (App.shutdownOrder). Each part, as it is built, registers what it does at
// start-up, in the drain's stream phase, when held calls are let go, and at close, under a step
// name; the order the steps run in is data (ORDER), not the order the parts happen to be built
// in, since a part is often built after what it must outlive (the pool after the upstream clients
// it closes before). Hooks registered under one step run together.

import type { Config, Topology } from '../config/index.js';
import type { Logger } from '../log.js';

/** A start-up step: awaited, awaited at most `waitMs` (0: not awaited), and what is said when it takes longer. */
export interface StartStep<Name extends string = string> {
  readonly name: Name;
  readonly waitMs?: number;
  readonly slow?: string;
}

export interface Order<S extends string, E extends string, L extends string, C extends string> {
  readonly start: ReadonlyArray<StartStep<S>>;
  /** The drain's stream phase: long-lived streams end with their closing result. */
  readonly endStreams: readonly E[];
  /** Once no request is left: what is held between rounds is let go. */
  readonly letGo: readonly L[];
  /** Then what the replica holds is released, one step after the other. */
  readonly close: readonly C[];
}

type Hooks<N extends string, F> = Map<N, F[]>;

export class Parts<S extends string, E extends string, L extends string, C extends string> {
  private readonly starts: Hooks<S, { run(): Promise<unknown>; undo?(): Promise<unknown> }> = new Map();
  private readonly streamEnds: Hooks<E, (timeoutMs: number) => Promise<unknown> | void> = new Map();
  private readonly letGos: Hooks<L, () => void> = new Map();
  private readonly closes: Hooks<C, () => Promise<unknown> | void> = new Map();

  constructor(
    private readonly order: Order<S, E, L, C>,
    private readonly log: Logger,
  ) {}

  /** `undo` runs when a later start-up step fails (a port opened before one that could not be). */
  onStart(name: S, run: () => Promise<unknown>, undo?: () => Promise<unknown>): void {
    add(this.starts, name, undo ? { run, undo } : { run });
  }

  onEndStreams(name: E, end: (timeoutMs: number) => Promise<unknown> | void): void {
    add(this.streamEnds, name, end);
  }

  onLetGo(name: L, letGo: () => void): void {
    add(this.letGos, name, letGo);
  }

  onClose(name: C, close: () => Promise<unknown> | void): void {
    add(this.closes, name, close);
  }

  /** The close steps some part registered, in the order the drain runs them. */
  get shutdownOrder(): readonly C[] {
    return this.order.close.filter((name) => this.closes.has(name));
  }

  async start(): Promise<void> {
    const done: Array<() => Promise<unknown>> = [];
    for (const step of this.order.start) {
      const hooks = this.starts.get(step.name) ?? [];
      try {
        const started = Promise.all(hooks.map((h) => h.run()));
        // A step not waited for to the end fails on its own: the part that registered it says why.
        if (step.waitMs !== undefined) started.catch(() => undefined);
        if (step.waitMs === undefined) await started;
        else if (step.waitMs > 0 && !(await settlesWithin(started, step.waitMs)) && step.slow) this.log.warn(step.slow);
      } catch (err) {
        for (const undo of done.reverse()) await undo();
        throw err;
      }
      for (const h of hooks) if (h.undo) done.push(h.undo);
    }
  }

  async endStreams(timeoutMs: number): Promise<void> {
    for (const name of this.order.endStreams)
      await Promise.all((this.streamEnds.get(name) ?? []).map((f) => f(timeoutMs)));
  }

  letGo(): void {
    for (const name of this.order.letGo) for (const f of this.letGos.get(name) ?? []) f();
  }

  /** One release per close step, for the drain to run in turn; each says when it is done. */
  releases(): Array<() => Promise<unknown>> {
    return this.shutdownOrder.map((name) => async () => {
      await Promise.all((this.closes.get(name) ?? []).map(async (f) => f()));
      this.log.debug({ part: name }, 'part closed');
    });
  }
}

function add<N extends string, F>(hooks: Hooks<N, F>, name: N, f: F): void {
  const list = hooks.get(name);
  if (list) list.push(f);
  else hooks.set(name, [f]);
}

/** Whether `p` settles within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}

/** Longest start-up waits for its pub/sub subscriptions; with Redis away they are made once it answers. */
const SUBSCRIBE_WAIT_MS = 2_000;
/**
 * Name conflicts between federated upstreams are reported before traffic arrives, unless a slow
 * upstream would hold start-up past this: then they are reported when found.
 */
const FEDERATION_CHECK_WAIT_MS = 10_000;

export const ORDER = {
  start: [
    { name: 'cross-replica' },
    // Other replicas' invalidations and names are heard once Redis is back, if it is away now.
    { name: 'replica-news', waitMs: SUBSCRIBE_WAIT_MS },
    // Meanwhile asks go to this replica's calls only.
    { name: 'replica-asks', waitMs: 0 },
    { name: 'rounds', waitMs: 0 },
    // Each auto upstream's era is found (or read from the store) now, rather than by the first request.
    { name: 'eras', waitMs: 0 },
    {
      name: 'replica-requests',
      waitMs: SUBSCRIBE_WAIT_MS,
      slow: "Redis pub/sub not reachable yet: handed-over retries and other replicas' requests are taken once it is",
    },
    { name: 'skills' },
    { name: 'federations', waitMs: FEDERATION_CHECK_WAIT_MS },
    { name: 'admin' },
    { name: 'ingress' },
    // Reloads begin once the ports are open, and end before the drain lets go of anything.
    { name: 'config-watch' },
  ],
  endStreams: ['subscriptions', 'upstreams', 'mounts', 'session-events'],
  // Tasks first: a followed task's call may be a held one.
  letGo: ['tasks', 'held'],
  close: [
    'config-watch',
    // Calls still running until now may have had asks handed to them from other replicas; the
    // bus those arrive on closes after the asks and the rounds.
    'replica-asks',
    'rounds',
    'cross-replica',
    'handoff',
    'cache',
    'catalog',
    // The pool ends its sessions through the store and the upstream clients: both close after it.
    'pool',
    'store',
    'upstreams',
    // The relays of the upstreams' stdio and HTTP+SSE sessions use this bus until those close.
    'relay-bus',
    'skills',
  ],
} as const satisfies Order<string, string, string, string>;

type Names<T extends readonly unknown[]> = T[number];
export type StartName = Names<typeof ORDER.start>['name'];
export type StreamName = Names<typeof ORDER.endStreams>;
export type LetGoName = Names<typeof ORDER.letGo>;
export type CloseName = Names<typeof ORDER.close>;

export type AppParts = Parts<StartName, StreamName, LetGoName, CloseName>;

/** What every part is built from. */
export interface Ground {
  parts: AppParts;
  config: Config;
  topology: Topology;
  /** This replica's id among those sharing the store. */
  replicaId: string;
  /** Requests this replica is serving, its own and those handed here: a drain waits for them. */
  inFlight: { count: number };
  log: Logger;
}
