// The standalone GET streams Causeway holds with nobody listening, so that what an upstream sends
// outside a call arrives: asks (routed to their call on any replica,
// upstream/replicas/replica-asks.ts) and list changes (for the gateway cache). A stream costs
// the upstream a connection held open, so they are held per upstream, not per session, except
// where something waits on a session's own (upstream.standingStream=auto):
// - One scout session per upstream: Causeway's own session (principal SCOUT_PRINCIPAL), which
//   declares everything a server may ask about, and whose stream hears the changes a server tells
//   all its sessions (public lists) and the asks a server sends right after initialize. It is
//   opened once a session whose client can be asked comes, or once the gateway cache keeps a
//   public list of the upstream, and kept in use from then on.
// - A session's own stream, when its upstream was seen asking outside a call
//   (upstream/replicas/outside-askers.ts, learned from any stream held) and its client declared
//   roots, sampling or elicitation; or when the gateway cache keeps a private list of it on a
//   change's word. `always` holds every session's; `never` none, and no scout.
// - A listen's, which a listen always holds (listen.ts).
// Each replica that has such a session in its pool stands by for it: a member of the key's
// listen channel that hears nothing, so the channel takes part in the GET-stream lease (one
// holder per key across replicas), takes the stream over when the holder's replica lapses, and
// follows the pool to a new session, as it does for listeners. Standing by costs the coordination
// store nothing until a holder lapses: liveness is per replica (bus/liveness.ts). A channel kept
// up only by standing members does not keep the session in use; it ends once the pool forgets the
// session. The scout's member is a listener that hears nothing: it keeps its session in use, and
// its channel opens a new one when the upstream forgets it. With one replica the same channels
// hold the streams, each the holder of its own lease.

import type { StandingStream } from '../config/index.js';
import type { JsonObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import type { PooledSession, SessionKey, SessionPool } from '../pool/index.js';
import type { ChannelMember, SessionChannel } from './channel.js';

/** What a server may ask a client outside a call: a session whose client declared none has nothing to hear there. */
const ASKABLE = ['roots', 'sampling', 'elicitation'] as const;

/** The principal of every upstream's scout session: a principal hash (base64url) never holds a `~`. */
export const SCOUT_PRINCIPAL = '~scout';

/** What a scout declares at initialize: everything a server may ask of a client. */
const SCOUT_CAPABILITIES: JsonObject = Object.freeze({
  roots: { listChanged: true },
  sampling: {},
  elicitation: { form: {}, url: {} },
});

/** An upstream's scout session: one key for every replica. */
export function scoutKey(upstream: string): SessionKey {
  return {
    id: `${upstream}|${SCOUT_PRINCIPAL}|scout`,
    upstream,
    principalHash: SCOUT_PRINCIPAL,
    legacyCapabilities: SCOUT_CAPABILITIES,
  };
}

/** Whether the client that declared `declared` can be asked outside a call. */
export function askable(declared: JsonObject): boolean {
  return ASKABLE.some((c) => declared[c] !== undefined);
}

/**
 * Whether a session's own GET stream is held while nobody listens: always, never, or (auto) when its
 * upstream asks outside a call and its client can be asked.
 */
export function wantsStandingStream(policy: StandingStream, declared: JsonObject, upstreamAsks: boolean): boolean {
  if (policy !== 'auto') return policy === 'always';
  return upstreamAsks && askable(declared);
}

/** After a scout could not be opened, the next try waits this long. */
const SCOUT_RETRY_MS = 30_000;

interface Scout {
  member: ChannelMember;
  channel?: SessionChannel;
}

interface Stand {
  channel: SessionChannel;
  member: ChannelMember;
}

export interface StandingDeps {
  pool: SessionPool;
  channelFor(key: SessionKey, session: PooledSession): SessionChannel;
  /** Whether this session has a standalone stream worth holding (its upstream has one, and may ask on it). */
  wants(session: PooledSession): boolean;
  /** Whether the upstream of `session`, new to this replica, should have its scout. */
  scouts(session: PooledSession): boolean;
  log: Logger;
  /** Longest a request that brought a new session waits for the stream to be up. */
  waitMs: number;
}

export class StandingBy {
  private readonly stands = new Map<string, Stand>();
  /** Each upstream's scout, by upstream name, from its first try on. */
  private readonly scouting = new Map<string, Scout>();
  /** When an upstream whose scout could not be opened may be tried again. */
  private readonly retryAt = new Map<string, number>();
  private closed = false;

  constructor(private readonly deps: StandingDeps) {}

  get size(): number {
    return this.stands.size + this.scouting.size;
  }

  /** Whether `upstream`'s scout is up: the changes it tells all its sessions reach Causeway. */
  scoutUp(upstream: string): boolean {
    return this.scouting.get(upstream)?.channel !== undefined;
  }

  /**
   * Stands by for `session`'s key. For a session this replica opened (it takes the lease first, and
   * servers ask right after initialize) resolves once the stream is up, or after waitMs; for one
   * found in the store, at once.
   */
  stand(session: PooledSession): Promise<void> {
    const id = session.key.id;
    // A session-less upstream has no stream of a session to hold, nor answers to take.
    if (this.closed || session.record.sessionId === undefined || session.key.principalHash === SCOUT_PRINCIPAL)
      return Promise.resolve();
    if (!this.scouting.has(session.key.upstream) && this.deps.scouts(session)) void this.scout(session.key.upstream);
    if (this.stands.has(id) || !this.deps.wants(session)) return Promise.resolve();
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
    for (const scout of this.scouting.values()) if (scout.channel) leaving.push(scout.channel.detach(scout.member));
    this.scouting.clear();
    await Promise.allSettled(leaving);
  }

  /**
   * Opens `upstream`'s scout session (or finds it in the store) and joins its channel, which holds
   * its GET stream here or stands by for the replica that does. A scout that could not be opened
   * (the upstream down, or its credentials per principal) is tried again on a later session.
   */
  private async scout(upstream: string): Promise<void> {
    if (this.closed || this.scouting.has(upstream) || (this.retryAt.get(upstream) ?? 0) > Date.now()) return;
    const scout: Scout = {
      member: {
        deliver: () => undefined,
        // The channel broke: the next session of the upstream brings a new scout.
        lost: () => {
          if (this.scouting.get(upstream) === scout) this.scouting.delete(upstream);
        },
      },
    };
    this.scouting.set(upstream, scout);
    const key = scoutKey(upstream);
    try {
      const channel = this.deps.channelFor(key, await this.deps.pool.acquire(key));
      await channel.attach(scout.member, []);
      if (this.scouting.get(upstream) !== scout) await channel.detach(scout.member);
      else scout.channel = channel;
    } catch (err) {
      if (this.scouting.get(upstream) === scout) this.scouting.delete(upstream);
      const again = this.retryAt.has(upstream);
      this.retryAt.set(upstream, Date.now() + SCOUT_RETRY_MS);
      const what = 'could not open the scout session of an upstream; trying again later';
      // Said once: an upstream that refuses Causeway's own session would say it every 30 s.
      if (again) this.deps.log.debug({ err, upstream }, what);
      else this.deps.log.info({ err, upstream }, what);
    }
  }

  private leave(id: string, stand: Stand): Promise<void> {
    if (this.stands.get(id) === stand) this.stands.delete(id);
    return stand.channel
      .detach(stand.member)
      .catch((err: unknown) => this.deps.log.debug({ err }, 'leaving a standing channel failed'));
  }
}
