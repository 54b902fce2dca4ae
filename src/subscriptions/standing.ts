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
import { SCOUT_PRINCIPAL, scoutKey, type PooledSession, type SessionKey, type SessionPool } from '../pool/index.js';
import type { ChannelMember, SessionChannel } from './channel.js';

/** What a server may ask a client outside a call: a session whose client declared none has nothing to hear there. */
const ASKABLE = ['roots', 'sampling', 'elicitation'] as const;

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

/** What decides, per upstream, which streams are held with nobody listening. */
export interface StandingPolicy {
  /** upstream.standingStream; default auto. */
  standingOf?(upstream: string): StandingStream;
  /** Whether the upstream was seen asking outside a call (upstream/replicas/outside-askers.ts); default never. */
  asksOutside?(upstream: string): boolean;
  /** Whether the upstream can have a scout session: its credentials are not per principal. Default yes. */
  scoutable?(upstream: string): boolean;
  /** The lists of the upstream the gateway cache keeps past their ttlMs on a change's word, by scope. */
  listsKept?(upstream: string): { public: boolean; private: boolean };
  /** Reads the scout session's tools into its facts, which new sessions of its upstream fall back on. */
  learnScout?(scout: PooledSession): Promise<void>;
}

export interface StandingDeps {
  pool: SessionPool;
  channelFor(key: SessionKey, session: PooledSession): SessionChannel;
  /** Whether the upstream's sessions have a standalone GET stream (Streamable HTTP). */
  hasStream(upstream: string): boolean;
  policy: StandingPolicy;
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
  /** Upstreams whose scout is reading its tools. */
  private readonly learning = new Set<string>();
  private closed = false;

  constructor(private readonly deps: StandingDeps) {}

  get size(): number {
    return this.stands.size + this.scouting.size;
  }

  /**
   * Whether a change the upstream tells of what was read on `session` (with `scope`, as the
   * gateway cache keeps it) reaches Causeway whether or not anybody listens: the session's own
   * GET stream is held, or the answer is public and the upstream's scout is up.
   */
  hears(session: PooledSession, scope?: 'public' | 'private'): boolean {
    return this.wants(session) || (scope === 'public' && this.scoutUp(session.key.upstream));
  }

  /** Whether the session's own GET stream is held though nobody listens (upstream.standingStream). */
  private wants(session: PooledSession): boolean {
    const { upstream, legacyCapabilities } = session.key;
    const { standingOf, asksOutside, listsKept } = this.deps.policy;
    if (!this.deps.hasStream(upstream)) return false;
    const policy = standingOf?.(upstream) ?? 'auto';
    if (policy === 'auto' && listsKept?.(upstream).private === true) return true;
    return wantsStandingStream(policy, legacyCapabilities, asksOutside?.(upstream) === true);
  }

  /** Whether `session`'s upstream should have a scout: something would hear through it. */
  private scouts(session: PooledSession): boolean {
    const upstream = session.key.upstream;
    const { standingOf, asksOutside, listsKept, scoutable } = this.deps.policy;
    if ((standingOf?.(upstream) ?? 'auto') !== 'auto' || scoutable?.(upstream) === false) return false;
    if (!this.deps.hasStream(upstream)) return false;
    if (listsKept?.(upstream).public === true) return true;
    return asksOutside?.(upstream) !== true && askable(session.key.legacyCapabilities);
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
    const upstream = session.key.upstream;
    if (!this.scouting.has(upstream) && this.scouts(session)) void this.scout(upstream);
    else this.learnTools(upstream);
    if (this.stands.has(id) || !this.wants(session)) return Promise.resolve();
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
      else {
        scout.channel = channel;
        this.learnTools(upstream);
      }
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

  /** The scout reads its tools, once up and until it has them all (again, after a change made them stale). */
  private learnTools(upstream: string): void {
    const learn = this.deps.policy.learnScout;
    if (learn === undefined || this.learning.has(upstream) || !this.scoutUp(upstream)) return;
    const session = this.deps.pool.peek(scoutKey(upstream).id);
    if (session === undefined || session.facts.toolsComplete) return;
    this.learning.add(upstream);
    void learn(session)
      .catch((err: unknown) => this.deps.log.debug({ err, upstream }, "the scout could not read the upstream's tools"))
      .finally(() => this.learning.delete(upstream));
  }

  private leave(id: string, stand: Stand): Promise<void> {
    if (this.stands.get(id) === stand) this.stands.delete(id);
    return stand.channel
      .detach(stand.member)
      .catch((err: unknown) => this.deps.log.debug({ err }, 'leaving a standing channel failed'));
  }
}
