// The standalone GET stream of each session, held from initialize on so that a server->client
// request sent outside any call (roots/list after initialize, or by a tool that does not name its
// call) reaches Causeway and is routed or refused at once instead of hanging the upstream's tool.
// At most `max` are held (one long-lived request each). A listen channel that opens the session's
// stream itself pauses this one (an upstream allows one GET stream per session) until it lets go;
// the stream ends when the session does, when the upstream has none (405) or cannot keep it up.

import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.js';
import { SessionExpiredError } from './errors.js';
import type { SessionRef } from './headers.js';

/** First GETs tried: a stream a listen just let go of may still be open upstream for a moment (409). */
const OPEN_ATTEMPTS = 4;
const OPEN_BACKOFF_MS = 100;

type Open = (session: SessionRef, signal: AbortSignal) => Promise<'unsupported' | { done: Promise<void> }>;

interface Held {
  session: SessionRef;
  running: AbortController | undefined;
  paused: number;
}

export class StandingStreams {
  private readonly held = new Map<string, Held>();

  constructor(
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
    const h: Held = { session, running: undefined, paused: 0 };
    this.held.set(id, h);
    return this.start(id, h);
  }

  /** Lets go of the session's stream while someone else holds it; the function returned takes it up again. */
  pause(sessionId: string | undefined): () => void {
    const h = sessionId === undefined ? undefined : this.held.get(sessionId);
    if (h === undefined) return () => undefined;
    h.paused += 1;
    h.running?.abort();
    h.running = undefined;
    let resumed = false;
    return () => {
      if (resumed) return;
      resumed = true;
      h.paused -= 1;
      void this.start(sessionId!, h);
    };
  }

  drop(sessionId: string | undefined): void {
    const h = sessionId === undefined ? undefined : this.held.get(sessionId);
    if (h === undefined) return;
    this.held.delete(sessionId!);
    h.running?.abort();
  }

  dropAll(): void {
    for (const id of [...this.held.keys()]) this.drop(id);
  }

  private start(id: string, h: Held): Promise<void> {
    if (h.paused > 0 || h.running !== undefined || this.held.get(id) !== h) return Promise.resolve();
    const running = new AbortController();
    h.running = running;
    const gone = (err?: unknown): void => {
      if (running.signal.aborted) return;
      if (err !== undefined) this.log.debug({ err }, 'the standing GET stream of a session ended');
      if (this.held.get(id) === h) this.held.delete(id);
    };
    return this.connect(h.session, running.signal).then(
      (opened) => {
        if (opened === 'unsupported') gone();
        else opened.done.then(() => gone(), gone);
      },
      gone,
    );
  }

  private async connect(session: SessionRef, signal: AbortSignal): ReturnType<Open> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.open(session, signal);
      } catch (err) {
        if (signal.aborted || err instanceof SessionExpiredError || attempt >= OPEN_ATTEMPTS) throw err;
        await sleep(OPEN_BACKOFF_MS * attempt, undefined, { signal });
      }
    }
  }
}
