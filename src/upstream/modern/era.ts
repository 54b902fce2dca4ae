// Which protocol era an upstream speaks: legacy (initialize and sessions, 2025-11-25 and older)
// or modern (stateless 2026-07-28). `upstream.era` names it, or `auto` finds it: one
// server/discover probe, read as a dual-era client reads it [VER][SHTTP]. A DiscoverResult, or a
// 2026 error (a -32022 naming 2026-07-28 among its supported versions), means modern; a 400, 404
// or 405 with no 2026 answer means legacy. 401, 403, 429, 5xx and network errors say nothing of
// the era: the last known era stays and the probe is tried again later. The era found is kept in
// the store, so the other replicas take it without probing, and probed again when the upstream
// refuses the era in use (a server upgraded or rolled back in place).

import type { Logger } from '../../log.js';
import { CausewayError, initializeRefusal, refusesEra } from '../../errors.js';
import { isObject, type JsonRpcRequest } from '../../jsonrpc.js';
import { MODERN_VERSION } from '../../version.js';

export const ERAS = ['auto', 'legacy', 'modern'] as const;
export type EraSetting = (typeof ERAS)[number];
export type Era = Exclude<EraSetting, 'auto'>;

export { MODERN_VERSION };

/** What one probe saw: an HTTP status and the parsed JSON-RPC message of the body, if any. */
export interface ProbeAnswer {
  status: number;
  message: unknown;
}

/** The era probe: server/discover with nothing declared, as `clientInfo` (over HTTP or a child's stdin). */
export function probeRequest(clientInfo: { name: string; version: string }): JsonRpcRequest {
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
    'io.modelcontextprotocol/clientInfo': clientInfo,
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  return { jsonrpc: '2.0', id: 'causeway-discover', method: 'server/discover', params: { _meta } };
}

/** The era an answer to server/discover shows, or undefined when it shows none. */
export function eraOf(answer: ProbeAnswer): Era | undefined {
  const { status, message } = answer;
  if (status === 401 || status === 403 || status === 429 || status >= 500) return undefined;
  if (isObject(message) && isObject(message.result) && Array.isArray(message.result.supportedVersions)) {
    return message.result.supportedVersions.includes(MODERN_VERSION) ? 'modern' : 'legacy';
  }
  if (isObject(message) && isObject(message.error)) {
    const { data } = message.error;
    if (refusesEra(message.error) && isObject(data) && Array.isArray(data.supported))
      return data.supported.includes(MODERN_VERSION) ? 'modern' : 'legacy';
  }
  if (status === 400 || status === 404 || status === 405) return 'legacy';
  return undefined;
}

/** Where the eras found are kept for every replica: the session store, or this process. */
export interface EraMemo {
  get(upstream: string): Promise<Era | undefined>;
  set(upstream: string, era: Era): Promise<void>;
}

export class MemoryEraMemo implements EraMemo {
  private readonly eras = new Map<string, Era>();
  async get(upstream: string): Promise<Era | undefined> {
    return this.eras.get(upstream);
  }
  async set(upstream: string, era: Era): Promise<void> {
    this.eras.set(upstream, era);
  }
}

/** What RedisEraMemo needs of a Redis client (ioredis's Redis or Cluster). */
export interface KeyValue {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, px: 'PX', ms: number): Promise<unknown>;
}

/** The eras in the store, a day each: a replica that starts takes the era the others found. */
export class RedisEraMemo implements EraMemo {
  constructor(
    private readonly redis: KeyValue,
    private readonly prefix: string,
  ) {}
  async get(upstream: string): Promise<Era | undefined> {
    const v = await this.redis.get(`${this.prefix}era:${upstream}`);
    return v === 'legacy' || v === 'modern' ? v : undefined;
  }
  async set(upstream: string, era: Era): Promise<void> {
    await this.redis.set(`${this.prefix}era:${upstream}`, era, 'PX', 24 * 3600_000);
  }
}

export interface EraOptions {
  upstream: string;
  setting: EraSetting;
  /** Sends server/discover (to `target`, one of `targets`, when given); rejects on a network error. */
  probe(signal: AbortSignal, target?: string): Promise<ProbeAnswer>;
  /**
   * The upstream's URLs, each asked in turn until one shows an era: one down, or answering 503 while
   * it restarts, says nothing of the others. Without them the probe goes where the client sends.
   */
  targets?: readonly string[];
  memo: EraMemo;
  log: Logger;
  /** Called once per era found or changed: the metric of upstreams by era. */
  onEra?(era: Era): void;
  /** The wait before probing again after a probe that said nothing. */
  retryMs?: number;
}

/**
 * One upstream's era: fixed by the setting, or found and kept. Until a probe shows one, a request
 * is served as the last era known, and as legacy when none ever was (what Causeway did before it
 * knew eras); the probe is tried again after retryMs.
 */
/**
 * How the era in use was found: the setting, a probe of this replica, the store (another replica's probe), or the
 * upstream's refusal of a legacy initialize.
 */
export type EraSource = 'setting' | 'probe' | 'store' | 'refusal';

export class UpstreamEra {
  private known: Era | undefined;
  private how: EraSource | undefined;
  /** The era before it was refused: served while no probe shows the new one. */
  private last: Era | undefined;
  private pending: Promise<Era> | undefined;
  private retryAt = 0;
  /** The stored era was refused: the next find probes instead of reading it. */
  private forgetInStore = false;

  constructor(private readonly opts: EraOptions) {
    if (opts.setting !== 'auto') {
      this.known = opts.setting;
      this.how = 'setting';
      opts.onEra?.(opts.setting);
    }
  }

  /** The era when known without asking anyone: the setting, or what was found. */
  get current(): Era | undefined {
    return this.known;
  }

  /** How the era known now was found; undefined while none is. */
  get source(): EraSource | undefined {
    return this.known === undefined ? undefined : this.how;
  }

  /** The era, found now if need be; several callers share one probe. */
  era(signal?: AbortSignal): Promise<Era> {
    if (this.known !== undefined) return Promise.resolve(this.known);
    if (Date.now() < this.retryAt) return Promise.resolve(this.last ?? 'legacy');
    return (this.pending ??= this.find(signal).finally(() => (this.pending = undefined)));
  }

  /**
   * The upstream refused the era in use: with `auto`, the era is forgotten here and in the
   * store, and found again at the next request. Returns true when it may have changed. A refusal
   * of Causeway's legacy `initialize` that names 2026-07-28 among the versions the upstream supports
   * (`refusal`, the error it came as) is what a probe looks for: the era is modern at once. That is
   * how a 2026 child too slow to answer the stdio probe in time, and so taken as legacy, is found.
   */
  refused(refusal?: unknown): boolean {
    if (this.opts.setting !== 'auto' || this.known === undefined) return false;
    if (this.known === 'legacy' && handshakeNamesModern(refusal)) {
      this.last = this.known;
      void this.opts.memo
        .set(this.opts.upstream, 'modern')
        .catch((err: unknown) => this.opts.log.warn({ err }, 'the era found could not be stored'));
      this.learn('modern', false);
      this.how = 'refusal';
      return true;
    }
    this.opts.log.info({ era: this.known }, 'the upstream refused its era: probing it again');
    this.last = this.known;
    this.known = undefined;
    this.forgetInStore = true;
    this.retryAt = 0;
    return true;
  }

  private async find(signal: AbortSignal | undefined): Promise<Era> {
    if (!this.forgetInStore) {
      const stored = await this.opts.memo.get(this.opts.upstream).catch(() => undefined);
      if (stored !== undefined) return this.learn(stored, false);
    }
    let answer: ProbeAnswer | undefined;
    let era: Era | undefined;
    const limit = signal ?? AbortSignal.timeout(30_000);
    for (const target of this.opts.targets ?? [undefined]) {
      if (limit.aborted) break;
      try {
        answer = await this.opts.probe(limit, target);
      } catch (err) {
        answer = undefined;
        this.opts.log.debug({ err: (err as Error).message }, 'the era probe failed');
      }
      era = answer && eraOf(answer);
      if (era !== undefined) break;
    }
    if (era === undefined) {
      this.retryAt = Date.now() + (this.opts.retryMs ?? 1_000);
      if (answer) this.opts.log.debug({ status: answer.status }, 'the era probe showed no era');
      return this.last ?? 'legacy';
    }
    this.forgetInStore = false;
    await this.opts.memo
      .set(this.opts.upstream, era)
      .catch((err: unknown) => this.opts.log.warn({ err }, 'the era found could not be stored'));
    return this.learn(era, true, answer);
  }

  private learn(era: Era, probed: boolean, answer?: ProbeAnswer): Era {
    if (this.known !== era) {
      // A bare 404 is what a legacy server answers, and also what a wrong path does: say which it was.
      const bare = answer !== undefined && answer.message === undefined;
      const why = bare
        ? ` (server/discover answered HTTP ${answer.status}, no JSON-RPC: if its requests fail too, check upstream.url)`
        : '';
      const fields = { era, probed, ...(bare ? { status: answer.status } : {}) };
      this.opts.log.info(fields, `the upstream speaks the ${era} protocol${why}`);
      this.opts.onEra?.(era);
    }
    this.known = era;
    this.how = probed ? 'probe' : 'store';
    return era;
  }
}

/**
 * Whether `refusal` is the upstream's refusal of Causeway's legacy `initialize` (refusedInitialize's
 * error, which names the version offered) with 2026-07-28 among the versions it supports. A call
 * refused so is left to a probe: a session's server may say one thing and the upstream another.
 */
function handshakeNamesModern(refusal: unknown): boolean {
  return refusesEra(refusal) && initializeRefusal(refusal)?.supported.includes(MODERN_VERSION) === true;
}

/** An upstream's refusal of the era it was spoken to in: a -32022 answer (handshake, or an HTTP refusal). */
export function isEraRefusal(err: unknown): boolean {
  return err instanceof CausewayError && refusesEra(err);
}
