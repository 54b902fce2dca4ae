// The standalone GET stream of each session, held from initialize on so that a server->client
// request sent outside any call (roots/list after initialize, or by a tool that does not name its
// call) reaches Causeway and is routed or refused at once instead of hanging the upstream's tool.
// At most `max` are held (one long-lived request each). A listen channel of the session shares the
// stream (an upstream allows one GET stream per session) rather than opening its own. The stream
// ends when the session does, when the upstream has none (405) or cannot keep it up. This is the
// one-replica case (memory store); across replicas the listen channels hold these streams under a
// lease (subscriptions/standing.ts) and asks are routed among replicas (replica-asks.ts).

import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonObject } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import type { StandingStream } from '../../config/index.js';
import { SessionExpiredError, type SessionRef, type StreamHandlers } from '../core/index.js';

/** First GETs tried before the stream is given up. */
const OPEN_ATTEMPTS = 4;
const OPEN_BACKOFF_MS = 100;

/** What a server may ask a client outside a call; only a session whose client declared one of them has anything to hear there. */
const ASKABLE = ['roots', 'sampling', 'elicitation'] as const;

/**
 * Whether a pooled session's GET stream is held while nobody listens (upstream.standingStream):
 * always, never, or (auto) when the capabilities declared at initialize let the upstream ask.
 */
export function wantsStandingStream(policy: StandingStream, declared: JsonObject): boolean {
  if (policy !== 'auto') return policy === 'always';
  return ASKABLE.some((c) => declared[c] !== undefined);
}

type Open = (session: SessionRef, handlers: StreamHandlers, signal: AbortSignal) => Promise<'unsupported' | { done: Promise<void> }>;

interface Sharer {
  handlers: StreamHandlers;
  end(err?: unknown): void;
}

interface Held {
  running: AbortController;
  sharers: Set<Sharer>;
}

export class StandingStreams {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly upstream: string,
    private readonly open: Open,
    private readonly max: number,
    private readonly log: Logger,
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** Resolves once the upstream took the stream (or refused it): an ask sent before then would be lost. */
  hold(session: SessionRef): Promise<void> {
    const id = session.sessionId;
    if (id === undefined || this.held.has(id) || this.held.size >= this.max) return Promise.resolve();
    const h: Held = { running: new AbortController(), sharers: new Set() };
    this.held.set(id, h);
    const fanOut: StreamHandlers = {
      onNotification: (n) => h.sharers.forEach((s) => s.handlers.onNotification?.(n)),
      beforeEvent: (e) => h.sharers.forEach((s) => s.handlers.beforeEvent?.(e)),
      afterEvent: (e) => h.sharers.forEach((s) => s.handlers.afterEvent?.(e)),
    };
    const gone = (err?: unknown): void => {
      if (this.held.get(id) === h) this.held.delete(id);
      if (h.running.signal.aborted) err = undefined;
      else if (err !== undefined) this.log.debug({ err }, 'the standing GET stream of a session ended');
      for (const s of [...h.sharers]) s.end(err);
    };
    return this.connect(session, fanOut, h.running.signal).then(
      (opened) => {
        if (opened === 'unsupported') gone();
        else opened.done.then(() => gone(), gone);
      },
      gone,
    );
  }

  /**
   * The session's messages that belong to no call, from its standing stream, until `signal`
   * aborts: done rejects when the stream is lost (the caller opens another). Undefined when none is held.
   */
  share(sessionId: string | undefined, handlers: StreamHandlers, signal: AbortSignal): { done: Promise<void> } | undefined {
    const h = sessionId === undefined ? undefined : this.held.get(sessionId);
    if (h === undefined || signal.aborted) return undefined;
    let sharer!: Sharer;
    const done = new Promise<void>((resolve, reject) => {
      const onAbort = (): void => sharer.end();
      sharer = {
        handlers,
        end: (err) => {
          h.sharers.delete(sharer);
          signal.removeEventListener('abort', onAbort);
          if (err === undefined) resolve();
          else reject(err);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
    h.sharers.add(sharer);
    return { done };
  }

  /** The session ended: a listen sharing its stream follows the pool to the next one. */
  drop(sessionId: string | undefined): void {
    const h = sessionId === undefined ? undefined : this.held.get(sessionId);
    if (h === undefined) return;
    this.held.delete(sessionId!);
    for (const s of [...h.sharers]) s.end(new SessionExpiredError(this.upstream));
    h.running.abort();
  }

  /** The client is closing: every stream ends, and those sharing them end quietly. */
  dropAll(): void {
    for (const h of this.held.values()) h.running.abort();
    this.held.clear();
  }

  private async connect(session: SessionRef, handlers: StreamHandlers, signal: AbortSignal): ReturnType<Open> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.open(session, handlers, signal);
      } catch (err) {
        if (signal.aborted || err instanceof SessionExpiredError || attempt >= OPEN_ATTEMPTS) throw err;
        await sleep(OPEN_BACKOFF_MS * attempt, undefined, { signal });
      }
    }
  }
}
