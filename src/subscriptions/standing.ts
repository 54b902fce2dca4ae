// Across replicas (store.kind=redis), the standalone GET stream of a pooled session the upstream
// may ask on (upstream.standingStream: by default, a session whose client declared roots,
// sampling or elicitation) is held by one of them whether or not anybody listens, so that what
// the upstream sends outside a call arrives: asks (routed to their call on any replica,
// upstream/replicas/replica-asks.ts) and list changes. Each replica that has such a session in its pool
// stands by for it: a member of the key's listen channel that hears nothing, so the channel
// takes part in the GET-stream lease (one holder per key), takes the stream over when the
// holder's replica lapses, and follows the pool to a new session, as it does for listeners.
// Standing by costs the coordination store nothing until a holder lapses: liveness is per
// replica (bus/liveness.ts). A channel kept up only by standing members does not keep the
// session in use; it ends once the pool forgets the session. With one replica (memory store) the
// upstream client holds these streams itself (upstream/replicas/standing-streams.ts).

import type { Logger } from '../log.js';
import type { PooledSession, SessionKey, SessionPool } from '../pool/index.js';
import type { ChannelMember, SessionChannel } from './channel.js';

interface Stand {
  channel: SessionChannel;
  member: ChannelMember;
}

export interface StandingDeps {
  pool: SessionPool;
  channelFor(key: SessionKey, session: PooledSession): SessionChannel;
  /** Whether this session has a standalone stream worth holding (its upstream has one, and may ask on it). */
  wants(session: PooledSession): boolean;
  log: Logger;
  /** Longest a request that brought a new session waits for the stream to be up. */
  waitMs: number;
}

export class StandingBy {
  private readonly stands = new Map<string, Stand>();
  private closed = false;

  constructor(private readonly deps: StandingDeps) {}

  get size(): number {
    return this.stands.size;
  }

  /**
   * Stands by for `session`'s key. For a session this replica opened (it takes the lease first, and
   * servers ask right after initialize) resolves once the stream is up, or after waitMs; for one
   * found in the store, at once.
   */
  stand(session: PooledSession): Promise<void> {
    const id = session.key.id;
    // A session-less upstream has no stream of a session to hold, nor answers to take.
    if (this.closed || this.stands.has(id) || session.record.sessionId === undefined || !this.deps.wants(session))
      return Promise.resolve();
    const channel = this.deps.channelFor(session.key, session);
    const stand: Stand = {
      channel,
      member: {
        standing: true,
        deliver: () => undefined,
        // The channel broke (its upstream is gone): the next sweep stands by anew, on a new channel.
        lost: () => this.leave(id, stand),
      },
    };
    this.stands.set(id, stand);
    const opened = channel.attach(stand.member, []).then(
      () => undefined,
      (err: unknown) => {
        this.deps.log.debug({ err }, 'could not stand by for the GET stream of a pooled session');
        if (this.stands.get(id) === stand) this.stands.delete(id);
      },
    );
    if (session.openedHere !== true) return Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.deps.waitMs)));
    return Promise.race([opened, waited]).finally(() => clearTimeout(timer));
  }

  /**
   * On the listen tick: leaves the keys the pool forgot, and stands by for sessions it has that nobody stands by for.
   */
  sweep(): void {
    for (const [id, stand] of this.stands) if (this.deps.pool.peek(id) === undefined) this.leave(id, stand);
    for (const s of this.deps.pool.sessions()) void this.stand(s);
  }

  /** Drain: every stand ends, and a lease held here is given up for another replica to take at once. */
  async close(): Promise<void> {
    this.closed = true;
    const leaving = [...this.stands].map(([id, stand]) => this.leave(id, stand));
    await Promise.allSettled(leaving);
  }

  private leave(id: string, stand: Stand): Promise<void> {
    if (this.stands.get(id) === stand) this.stands.delete(id);
    return stand.channel
      .detach(stand.member)
      .catch((err: unknown) => this.deps.log.debug({ err }, 'leaving a standing channel failed'));
  }
}
