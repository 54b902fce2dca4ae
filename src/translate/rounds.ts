// The asks of an input_required round, put to a legacy client as the server->client requests of
// its era on the call's POST stream, and the client's answers gathered back. An ask's JSON-RPC
// id names the replica that holds the round and the session it was put to, so the answer, POSTed
// to whichever replica the balancer picks, reaches it: here at once, from another replica over
// the message bus, acknowledged by the holder. An answer nobody waits for (an unknown id, a
// round already over, another session's) is refused, and nothing else is touched.

import { randomUUID } from 'node:crypto';
import { readMessage, type MessageBus } from '../bus/index.js';
import { InFlightByKey } from '../in-flight.js';
import type { JsonRpcResponse, RequestId } from '../jsonrpc.js';
import type { Logger } from '../log.js';

interface Round {
  session: string;
  /** Ask id -> the inputRequests key it asks for. */
  keys: Map<string, string>;
  answers: Map<string, JsonRpcResponse>;
  done(answers: Map<string, JsonRpcResponse>): void;
}

type Wire =
  | { t: 'answer'; id: string; from: string; s: string; r: JsonRpcResponse }
  | { t: 'ack'; id: string; ok: boolean }
  | { t: 'changed'; from: string; s: string };

const PREFIX = 'cw~';

export class AskRounds {
  // By ids that are never array indices (PREFIX, a UUID): dictionaries rather than Maps that
  // gain and lose an entry each round (src/in-flight.ts).
  private readonly rounds = new InFlightByKey<Round>();
  /** Ask id -> its round's id. */
  private readonly asks = new InFlightByKey<string>();
  private readonly acks = new InFlightByKey<(ok: boolean) => void>();
  /** Session id -> what to call when its subscriptions change (its GET stream, held here). */
  private readonly watchers = new Map<string, Set<() => void>>();
  private unsubscribe: Array<() => Promise<void>> | undefined;
  private seq = 0;
  /** Set by start(): with one replica there is none, and every answer is this replica's. */
  private bus: MessageBus | undefined;

  constructor(
    private readonly replicaId: string,
    private readonly channelPrefix: string,
    private readonly ackTimeoutMs: number,
    private readonly log: Logger,
  ) {}

  private channel(replica: string): string {
    return `${this.channelPrefix}lface:${replica}`;
  }

  /** Starts hearing answers other replicas pass on, and the sessions whose subscriptions changed. */
  async start(bus: MessageBus): Promise<void> {
    if (this.unsubscribe) return;
    this.bus = bus;
    this.unsubscribe = [];
    const heard = (text: string) => this.heard(text);
    this.unsubscribe.push(await this.bus.subscribe(this.channel(this.replicaId), heard));
    // Changes told while the channel was down may have been missed: every watcher looks again.
    this.unsubscribe.push(
      await this.bus.subscribe(this.channel('changed'), heard, () =>
        this.watchers.forEach((set) => set.forEach((fn) => fn())),
      ),
    );
  }

  async close(): Promise<void> {
    await Promise.all((this.unsubscribe ?? []).map((u) => u().catch(() => undefined)));
    this.unsubscribe = undefined;
  }

  /** Calls `fn` whenever `session`'s subscriptions change, on any replica; returns the way to stop. */
  watch(session: string, fn: () => void): () => void {
    let set = this.watchers.get(session);
    if (!set) this.watchers.set(session, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.watchers.delete(session);
    };
  }

  /** Tells the GET stream of `session`, wherever it is held, that its subscriptions changed. */
  changed(session: string): void {
    for (const fn of this.watchers.get(session) ?? []) fn();
    if (!this.bus) return;
    this.bus
      .publish(
        this.channel('changed'),
        JSON.stringify({ t: 'changed', from: this.replicaId, s: session } satisfies Wire),
      )
      .catch((err: unknown) => {
        this.log.warn({ err }, 'a change of subscriptions could not be told to the other replicas');
      });
  }

  /**
   * Opens a round for `keys` on `session`: each key's ask id, and the answers once every ask has
   * one. Aborting `signal` (the call's stream gone) ends the round unanswered.
   */
  open(
    session: string,
    keys: readonly string[],
    signal: AbortSignal,
  ): { ids: Map<string, string>; answered: Promise<Map<string, JsonRpcResponse>> } {
    const roundId = `${PREFIX}${this.replicaId}~${(this.seq++).toString(36)}`;
    const ids = new Map<string, string>();
    const byAsk = new Map<string, string>();
    keys.forEach((key, i) => {
      const askId = `${roundId}~${i}`;
      ids.set(key, askId);
      byAsk.set(askId, key);
      this.asks.set(askId, roundId);
    });
    const answered = new Promise<Map<string, JsonRpcResponse>>((resolve, reject) => {
      const end = () => {
        this.rounds.delete(roundId);
        for (const askId of byAsk.keys()) this.asks.delete(askId);
        signal.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        end();
        reject(signal.reason ?? new Error('aborted'));
      };
      this.rounds.set(roundId, {
        session,
        keys: byAsk,
        answers: new Map(),
        done: (answers) => {
          end();
          resolve(answers);
        },
      });
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    return { ids, answered };
  }

  /** A client's answer on `session`: taken here or by the replica holding its round; false when nobody waits for it. */
  async answer(session: string, response: JsonRpcResponse): Promise<boolean> {
    const id = response.id;
    if (typeof id !== 'string' || !id.startsWith(PREFIX)) return false;
    const replica = id.slice(PREFIX.length, id.indexOf('~', PREFIX.length));
    if (replica === this.replicaId || !this.bus || !this.unsubscribe) return this.take(id, session, response);
    const wireId = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const acked = new Promise<boolean>((resolve) => {
      this.acks.set(wireId, (ok) => {
        clearTimeout(timer);
        this.acks.delete(wireId);
        resolve(ok);
      });
    });
    try {
      const heard = await this.bus.publish(
        this.channel(replica),
        JSON.stringify({ t: 'answer', id: wireId, from: this.replicaId, s: session, r: response } satisfies Wire),
      );
      // The holder has ackTimeoutMs from when the answer went out (the bus holds it while Redis fails over).
      if (this.acks.has(wireId)) {
        timer = setTimeout(() => this.acks.get(wireId)?.(false), this.ackTimeoutMs);
        timer.unref();
      }
      if (heard === 0) this.acks.get(wireId)?.(false);
    } catch (err) {
      this.log.warn({ err }, 'an answer to an ask could not be passed to the replica holding its call');
      this.acks.get(wireId)?.(false);
    }
    return acked;
  }

  private take(askId: RequestId, session: string, response: JsonRpcResponse): boolean {
    const roundId = typeof askId === 'string' ? this.asks.get(askId) : undefined;
    const round = roundId === undefined ? undefined : this.rounds.get(roundId);
    if (round === undefined || round.session !== session) return false;
    const key = round.keys.get(askId as string)!;
    if (round.answers.has(key)) return false;
    round.answers.set(key, response);
    if (round.answers.size === round.keys.size) round.done(round.answers);
    return true;
  }

  private heard(text: string): void {
    const m = readMessage<Wire>(text);
    if (m?.t === 'ack') return this.acks.get(m.id)?.(m.ok);
    if (m?.t === 'changed') {
      if (m.from !== this.replicaId) for (const fn of this.watchers.get(m.s) ?? []) fn();
      return;
    }
    if (m?.t !== 'answer') return;
    const ok = this.take(m.r.id as RequestId, m.s, m.r);
    this.bus!.publish(this.channel(m.from), JSON.stringify({ t: 'ack', id: m.id, ok } satisfies Wire)).catch(
      (err: unknown) => {
        this.log.debug({ err }, 'an answer was taken, but its acknowledgment could not be sent');
      },
    );
  }
}
