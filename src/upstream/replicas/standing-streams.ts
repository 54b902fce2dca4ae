// The standalone GET stream of each session, held from initialize on so that a server->client
// request sent outside any call (roots/list after initialize, or by a tool that does not name its
// call) reaches Causeway and is routed or refused at once instead of hanging the upstream's tool.
// At most `max` are held (one long-lived request each). A listen channel of the session shares the
// stream (an upstream allows one GET stream per session) rather than opening its own. The stream
// ends when the session does, when the upstream has none (405) or cannot keep it up. This is the
// one-replica case (memory store); across replicas the listen channels hold these streams under a
// lease (subscriptions/standing.ts) and asks are routed among replicas (replica-asks.ts).
//
// StandingStreams wraps a Streamable HTTP client and has its interface (as ReplicaRelay wraps a
// channel client): it holds the stream after the client's initialize, hands a listen the held
// stream, and lets go of it when the session ends or the client closes; calls pass straight on.

import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonObject, JsonRpcNotification, JsonRpcResponse } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import type { StandingStream } from '../../config/index.js';
import {
  SessionExpiredError,
  type HandshakeResult,
  type InitializeParams,
  type SessionRef,
  type StreamHandlers,
  type UpstreamSessionClient,
} from '../core/index.js';

/** First GETs tried before the stream is given up. */
const OPEN_ATTEMPTS = 4;
const OPEN_BACKOFF_MS = 100;

/**
 * What a server may ask a client outside a call; only a session whose client declared one of them has anything to hear
 * there.
 */
const ASKABLE = ['roots', 'sampling', 'elicitation'] as const;

/**
 * Whether a pooled session's GET stream is held while nobody listens (upstream.standingStream):
 * always, never, or (auto) when the capabilities declared at initialize let the upstream ask.
 */
export function wantsStandingStream(policy: StandingStream, declared: JsonObject): boolean {
  if (policy !== 'auto') return policy === 'always';
  return ASKABLE.some((c) => declared[c] !== undefined);
}

type Opened = 'unsupported' | { done: Promise<void> };

export interface StandingOptions {
  upstream: string;
  /** Most streams held at once. */
  max: number;
  /** Whose sessions get one (upstream.standingStream). */
  policy: StandingStream;
  /** How long an initialize waits for its session's stream to be up. */
  waitMs: number;
  log: Logger;
}

interface Sharer {
  handlers: StreamHandlers;
  end(err?: unknown): void;
}

interface Held {
  running: AbortController;
  sharers: Set<Sharer>;
}

export class StandingStreams implements UpstreamSessionClient {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly inner: UpstreamSessionClient,
    private readonly opts: StandingOptions,
  ) {}

  get size(): number {
    return this.held.size;
  }

  admits(target: string | undefined): boolean {
    return this.inner.admits(target);
  }

  targetIndex(target: string | undefined): number {
    return this.inner.targetIndex(target);
  }

  hasStandaloneStream(): boolean {
    return this.inner.hasStandaloneStream?.() === true;
  }

  async initialize(params: InitializeParams, signal?: AbortSignal, principal?: string): Promise<HandshakeResult> {
    const hs = await this.inner.initialize(params, signal, principal);
    if (wantsStandingStream(this.opts.policy, params.capabilities)) {
      // Servers ask right after initialize, or in the first call: the stream should be up by then.
      // A server slow to answer a GET holds the session's opening up to waitMs, no longer.
      const up = this.hold({
        sessionId: hs.sessionId,
        protocolVersion: hs.protocolVersion,
        target: hs.target,
        principal,
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([up, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.opts.waitMs)))]);
      clearTimeout(timer);
    }
    return hs;
  }

  request(...call: Parameters<UpstreamSessionClient['request']>): Promise<JsonRpcResponse> {
    return this.inner.request(...call);
  }

  resumeCall(...resume: Parameters<UpstreamSessionClient['resumeCall']>): Promise<JsonRpcResponse> {
    return this.inner.resumeCall(...resume);
  }

  notify(session: SessionRef, n: JsonRpcNotification): Promise<void> {
    return this.inner.notify(session, n);
  }

  respond(session: SessionRef, r: JsonRpcResponse): Promise<void> {
    return this.inner.respond(session, r);
  }

  /** A listen hears the stream held for the session, if there is one; a resume (`lastEventId`) opens its own. */
  openStream(
    session: SessionRef,
    handlers: StreamHandlers,
    signal: AbortSignal,
    lastEventId?: string,
  ): Promise<Opened> {
    const shared = lastEventId === undefined ? this.share(session.sessionId, handlers, signal) : undefined;
    return shared ? Promise.resolve(shared) : this.inner.openStream(session, handlers, signal, lastEventId);
  }

  terminate(session: SessionRef): Promise<void> {
    this.drop(session.sessionId);
    return this.inner.terminate(session);
  }

  close(): Promise<void> {
    this.dropAll();
    return this.inner.close();
  }

  destroy(): Promise<void> {
    this.dropAll();
    return this.inner.destroy();
  }

  /** Resolves once the upstream took the stream (or refused it): an ask sent before then would be lost. */
  private hold(session: SessionRef): Promise<void> {
    const id = session.sessionId;
    if (id === undefined || this.held.has(id) || this.held.size >= this.opts.max) return Promise.resolve();
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
      else if (err !== undefined) this.opts.log.debug({ err }, 'the standing GET stream of a session ended');
      for (const s of [...h.sharers]) s.end(err);
    };
    return this.connect(session, fanOut, h.running.signal).then((opened) => {
      if (opened === 'unsupported') gone();
      else opened.done.then(() => gone(), gone);
    }, gone);
  }

  /**
   * The session's messages that belong to no call, from its standing stream, until `signal`
   * aborts: done rejects when the stream is lost (the caller opens another). Undefined when none is held.
   */
  private share(
    sessionId: string | undefined,
    handlers: StreamHandlers,
    signal: AbortSignal,
  ): { done: Promise<void> } | undefined {
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
  private drop(sessionId: string | undefined): void {
    const h = sessionId === undefined ? undefined : this.held.get(sessionId);
    if (h === undefined) return;
    this.held.delete(sessionId!);
    for (const s of [...h.sharers]) s.end(new SessionExpiredError(this.opts.upstream));
    h.running.abort();
  }

  /** The client is closing: every stream ends, and those sharing them end quietly. */
  private dropAll(): void {
    for (const h of this.held.values()) h.running.abort();
    this.held.clear();
  }

  private async connect(session: SessionRef, handlers: StreamHandlers, signal: AbortSignal): Promise<Opened> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.inner.openStream(session, handlers, signal);
      } catch (err) {
        if (signal.aborted || err instanceof SessionExpiredError || attempt >= OPEN_ATTEMPTS) throw err;
        await sleep(OPEN_BACKOFF_MS * attempt, undefined, { signal });
      }
    }
  }
}
