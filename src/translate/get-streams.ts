// A legacy client's GET stream through the translated face: a subscriptions/listen upstream for
// the session's list changes and resource subscriptions, opened again when its subscriptions
// change (rounds.ts tells of it, from any replica), ended by DELETE or a drain. Everything sent is
// what a legacy server would send (clean.ts).

import { SseStream, type HttpResponse } from '../egress/index.js';
import type { HeaderBag } from '../envelope/index.js';
import { causewayError } from '../errors.js';
import type { Logger } from '../log.js';
import { acceptsSse, keepAlive } from '../passthrough/index.js';
import type { UpstreamCache } from '../cache/index.js';
import type { ForwardPolicy, ModernClient } from '../upstream/index.js';
import { legacyMessage } from './clean.js';
import type { AskRounds } from './rounds.js';
import type { FactsStore, SessionRecord } from './sessions.js';
import { modernRequest } from './wire.js';

export interface GetStreamOptions {
  client: ModernClient;
  facts: FactsStore;
  rounds: AskRounds;
  forward: ForwardPolicy;
  keepAliveMs: number;
  cache?: UpstreamCache;
}

/** The GET streams open here, by session id: a change of its subscriptions restarts its listen. */
export class GetStreams {
  private readonly streams = new Map<string, { restart(): void; end(): void }>();

  constructor(
    private readonly opts: GetStreamOptions,
    private readonly log: Logger,
    private readonly nextId: () => string,
  ) {}

  end(sessionId: string): void {
    this.streams.get(sessionId)?.end();
  }

  endAll(): void {
    for (const s of this.streams.values()) s.end();
  }

  /** The session's GET stream: a subscriptions/listen upstream, opened again when its subscriptions change. */
  async serve(
    session: { id: string; record: SessionRecord },
    principal: string,
    headers: HeaderBag,
    res: HttpResponse,
    signal: AbortSignal,
  ): Promise<void> {
    if (!acceptsSse(headers)) throw causewayError('not_acceptable', 'A GET stream needs Accept: text/event-stream');
    this.streams.get(session.id)?.end();
    const ended = new AbortController();
    let restart = new AbortController();
    const entry = { restart: () => restart.abort(), end: () => ended.abort() };
    this.streams.set(session.id, entry);
    const stream = new SseStream(res);
    stream.start();
    const stopKeepAlive = keepAlive(stream, this.opts.keepAliveMs);
    const unwatch = this.opts.rounds.watch(session.id, () => entry.restart());
    try {
      while (!signal.aborted && !ended.signal.aborted) {
        const facts = await this.opts.facts.get(session.id);
        if (facts === undefined || facts.principal !== principal) break;
        restart = new AbortController();
        const notifications = {
          toolsListChanged: true,
          promptsListChanged: true,
          resourcesListChanged: true,
          resourceSubscriptions: facts.uris,
        };
        const request = modernRequest(
          { jsonrpc: '2.0', id: 0, method: 'subscriptions/listen', params: { notifications } },
          this.nextId(),
          facts,
          undefined,
        );
        try {
          await this.opts.client.request(request, undefined, {
            headers: this.opts.forward.pick(headers),
            principal,
            signal: AbortSignal.any([signal, ended.signal, restart.signal]),
            longLived: true,
            onNotification: (n) => {
              if (n.method === 'notifications/subscriptions/acknowledged') return;
              this.opts.cache?.changed(n);
              // Without the listen's subscriptionId and any other 2026 key (clean.ts).
              const legacy = legacyMessage(n);
              if (legacy !== undefined) stream.send(legacy);
            },
          });
          // The upstream ended the listen: the legacy client's stream ends too; it may GET again.
          break;
        } catch (err) {
          if (restart.signal.aborted && !signal.aborted && !ended.signal.aborted) continue;
          throw err;
        }
      }
    } catch (err) {
      if (!signal.aborted && !ended.signal.aborted)
        this.log.debug({ err: (err as Error).message }, 'a legacy GET stream ended');
    } finally {
      stopKeepAlive();
      unwatch();
      if (this.streams.get(session.id) === entry) this.streams.delete(session.id);
      stream.end();
    }
  }
}
