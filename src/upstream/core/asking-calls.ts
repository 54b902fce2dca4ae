// The local registry of asking calls: server->client requests that arrive on a session's
// standalone GET stream, outside any call's own stream. The legacy protocol does not say which
// call such an ask belongs to: it goes to the one multi-round call (tools/call, prompts/get,
// resources/read) in flight on the session, and with none or several it is refused at once, so
// the upstream's tool goes on without an answer rather than waiting out its own timeout. Only
// calls that can relay an ask are counted. Across replicas the call may be on another replica
// (an AskRelay: replicas/replica-asks.ts), which names the session by its digest; the composition
// root gives it one when it builds this.

import { InFlight, type InFlightEntry } from '../../in-flight.js';
import type { JsonRpcRequest } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import type { OutsideAskOutcome } from '../../metrics/index.js';
import { sessionDigest } from './headers.js';
import type { AskingCall } from './session-client.js';

/** A replica's own calls that can take an outside ask, by session digest, as other replicas ask for them. */
export interface LocalAsks {
  count(digest: string): number;
  /** Hands the ask to the only such call; false when there is none or more than one. */
  giveByDigest(digest: string, r: JsonRpcRequest): boolean;
}

/** Where an outside ask finds its call on another replica (replicas/replica-asks.ts). */
export interface AskRelay {
  register(upstream: string, local: LocalAsks): void;
  route(upstream: string, sessionId: string, r: JsonRpcRequest): Promise<OutsideAskOutcome>;
}

/** Calls whose asks the multi-round bridge relays. */
export const ASKING_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** Where an upstream's outside asks may go besides this replica's own calls, and who hears where each went. */
export interface AskRouting {
  upstream: string;
  /** With replicas sharing sessions: the call may run on another replica. */
  replicas?: AskRelay;
  onOutcome?(outcome: OutsideAskOutcome): void;
  /** An ask came outside a call's own stream: the upstream is one that asks so (replicas/outside-askers.ts). */
  onAsk?(): void;
}

/** Where a call is counted on its session, from add() to remove(). */
export type AskEntry = InFlightEntry<AskingCall>;

export class OutsideAsks implements LocalAsks {
  private readonly calls = new Map<string, InFlight<AskingCall>>();

  constructor(
    private readonly log: Logger,
    private readonly routing?: AskRouting,
  ) {
    routing?.replicas?.register(routing.upstream, this);
  }

  /**
   * Counts `call` as in flight on its session until the function returned is called; undefined when it cannot take
   * asks.
   */
  enter(call: AskingCall, method: string | undefined): (() => void) | undefined {
    const entry = this.add(call, method);
    return entry && (() => this.remove(entry));
  }

  /**
   * enter() without the closure: counts `call` until remove() of what this returns; undefined when it cannot take asks.
   */
  add(call: AskingCall, method: string | undefined): AskEntry | undefined {
    const id = call.session.sessionId;
    if (
      id === undefined ||
      call.handlers.onServerRequest === undefined ||
      (method !== undefined && !ASKING_METHODS.has(method))
    )
      return undefined;
    let calls = this.calls.get(id);
    if (!calls) this.calls.set(id, (calls = new InFlight()));
    return calls.add(call);
  }

  remove(entry: AskEntry): void {
    const id = entry.value?.session.sessionId;
    const calls = id === undefined ? undefined : this.calls.get(id);
    if (calls === undefined || !calls.delete(entry)) return;
    if (calls.size === 0) this.calls.delete(id!);
  }

  /** Hands `r` to the only call on the session that can take an ask; false when there is none or more than one. */
  give(sessionId: string | undefined, r: JsonRpcRequest): boolean {
    return this.deliver(sessionId === undefined ? undefined : this.calls.get(sessionId), r);
  }

  /**
   * An ask from the session's GET stream, to its one asking call on any replica; `refuse` answers the upstream when
   * there is none.
   */
  route(sessionId: string | undefined, r: JsonRpcRequest, refuse: () => void): void {
    this.routing?.onAsk?.();
    const settle = (outcome: OutsideAskOutcome): void => {
      if (outcome === 'refused') refuse();
      this.routing?.onOutcome?.(outcome);
    };
    const replicas = this.routing?.replicas;
    if (replicas && sessionId !== undefined) void replicas.route(this.routing!.upstream, sessionId, r).then(settle);
    else settle(this.give(sessionId, r) ? 'given' : 'refused');
  }

  count(digest: string): number {
    return this.withDigest(digest)?.size ?? 0;
  }

  giveByDigest(digest: string, r: JsonRpcRequest): boolean {
    return this.deliver(this.withDigest(digest), r);
  }

  /** Few sessions have calls in flight at once: hashing their ids when asked costs less than hashing every call's. */
  private withDigest(digest: string): InFlight<AskingCall> | undefined {
    for (const [id, calls] of this.calls) if (sessionDigest(id) === digest) return calls;
    return undefined;
  }

  private deliver(calls: InFlight<AskingCall> | undefined, r: JsonRpcRequest): boolean {
    if (calls === undefined || calls.size !== 1) return false;
    const call = calls.first()!;
    call.asked = true;
    try {
      call.handlers.onServerRequest?.(r);
    } catch (err) {
      this.log.error({ err, method: r.method }, 'upstream message handler threw');
    }
    return true;
  }
}
