// The children of a 2026-07-28 stdio upstream on one replica: 2026 is stateless, so a small pool
// (upstream.stdioPool, 1 by default) serves every principal, not one child per session. A
// request goes to the child with the fewest requests in flight; another child is started only
// while every open one is busy and the pool is not full. A lost child is replaced at the next
// request, after a backoff that doubles while children keep being lost (as ChannelClient's).
// The pool is also the wire ModernClient sends through: each request's bytes parsed and sent
// to a child (child.ts), its answer given back as HTTP would give it (answer.ts).

import { CausewayError, causewayError, pinnedStatus } from '../../errors.js';
import { isObject, type JsonRpcRequest } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import type { ChannelOpener } from '../channel/index.js';
import { CallScope, ScopeSet } from '../http/index.js';
import { probeRequest, type ModernAnswer, type ModernCallOptions } from '../modern/index.js';
import type { ModernWire, ProbeAnswer } from '../modern/index.js';
import { ModernChild } from './child.js';

export interface ModernStdioOptions {
  /** Most children at once. */
  size: number;
  requestTimeoutMs: number;
  /** How long the era probe waits for server/discover's answer; none in time: a legacy child [STDIO]. */
  probeTimeoutMs: number;
  /** Backoff before starting a child after one was lost: first wait, doubled per loss, capped. */
  restartBackoffMs?: number;
  maxRestartBackoffMs?: number;
  /** Children open, after each change. */
  onChildren?(open: number): void;
  /** A child was started after one was lost (a restart). */
  onRestart?(): void;
}

/** A child that lived this long before it was lost counts as the first loss again. */
const HEALTHY_LIFETIME_MS = 10_000;

export class ModernStdioPool implements ModernWire {
  private readonly children = new Set<ModernChild>();
  private readonly lifetime = new ScopeSet();
  private starting: Promise<ModernChild> | undefined;
  private losses = 0;
  private lastLossAt = 0;
  private restartOwed = false;
  private closed = false;

  constructor(
    private readonly upstream: string,
    private readonly opener: ChannelOpener,
    private readonly log: Logger,
    private readonly opts: ModernStdioOptions,
  ) {}

  /** Children open now. */
  get size(): number {
    return this.children.size;
  }

  post(body: string | Uint8Array, method: string, _name: unknown, opts: ModernCallOptions): Promise<ModernAnswer> {
    let msg: unknown;
    try {
      msg = JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'));
    } catch (err) {
      return Promise.reject(causewayError('internal_error', `a ${method} request to send is no JSON`, undefined, err));
    }
    if (!isObject(msg) || (typeof msg.id !== 'string' && typeof msg.id !== 'number')) {
      return Promise.reject(causewayError('internal_error', `a ${method} request to send has no id`));
    }
    const timeoutMs = opts.longLived ? undefined : this.opts.requestTimeoutMs;
    return this.send(msg as unknown as JsonRpcRequest, opts.signal, timeoutMs);
  }

  /**
   * server/discover on a child's stdin, read for its era [STDIO]: a DiscoverResult or a 2026
   * error is modern; any other error, or no answer in probeTimeoutMs, is legacy (given as a
   * 404, what eraOf reads as legacy). A child that cannot be started says nothing of the era.
   */
  async probe(signal: AbortSignal, clientInfo: { name: string; version: string }): Promise<ProbeAnswer> {
    const msg = probeRequest(clientInfo);
    const child = await this.pick(signal);
    let res: ModernAnswer;
    try {
      res = await child.send(msg, signal, this.opts.probeTimeoutMs);
    } catch (err) {
      if (err instanceof CausewayError && err.reason === 'upstream_timeout') return { status: 404, message: undefined };
      throw err;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of res.body) chunks.push(Buffer.from(chunk));
    const text = Buffer.concat(chunks).toString('utf8');
    const json = res.headers['content-type'] === 'application/json';
    const message: unknown = JSON.parse(json ? text : (lastData(text) ?? 'null'));
    const code = isObject(message) && isObject(message.error) ? message.error.code : undefined;
    // A 2026 envelope error (pinned to 400) is a modern server's answer; any other error refuses the probe.
    const refused = typeof code === 'number' && pinnedStatus(code) !== 400;
    return { status: refused ? 404 : res.statusCode, message };
  }

  /** The children stop (the era found is legacy, or Causeway stops): the next request starts one again. */
  async release(): Promise<void> {
    await Promise.allSettled([...this.children].map((c) => c.close()));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.lifetime.end();
    await this.starting?.catch(() => undefined);
    await this.release();
    await this.opener.close?.();
  }

  private async send(msg: JsonRpcRequest, signal: AbortSignal, timeoutMs: number | undefined): Promise<ModernAnswer> {
    const child = await this.pick(signal);
    return child.send(msg, signal, timeoutMs);
  }

  /** The child with fewest requests in flight; another one started while all are busy and there is room. */
  private async pick(signal: AbortSignal): Promise<ModernChild> {
    if (this.closed) throw new CausewayError('upstream_unavailable', `Upstream ${this.upstream}: the client is closed`);
    let best: ModernChild | undefined;
    for (const c of this.children) if (best === undefined || c.load < best.load) best = c;
    const full = this.starting !== undefined || this.children.size >= this.opts.size;
    if (best !== undefined && (best.load === 0 || full)) return best;
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    if (best !== undefined) return best;
    return waitFor(this.starting, signal);
  }

  private async start(): Promise<ModernChild> {
    const scope = new CallScope(undefined, [this.lifetime], this.opts.requestTimeoutMs);
    try {
      await this.backoff(scope);
      const channel = await this.opener.open(scope.signal);
      const child = new ModernChild(channel, this.log, (c, reason) => this.lose(c, reason));
      if (child.lost) throw new CausewayError('upstream_unavailable', `Upstream ${this.upstream}: its process exited`);
      this.children.add(child);
      this.opts.onChildren?.(this.children.size);
      if (this.restartOwed) {
        this.restartOwed = false;
        this.opts.onRestart?.();
      }
      this.log.debug({ children: this.children.size }, 'modern upstream child started');
      return child;
    } catch (err) {
      throw scope.settle(err);
    } finally {
      scope.dispose();
    }
  }

  private lose(child: ModernChild, reason: Error | undefined): void {
    if (this.children.delete(child)) this.opts.onChildren?.(this.children.size);
    if (reason === undefined || this.closed) return;
    const now = Date.now();
    this.losses = now - child.openedAt >= HEALTHY_LIFETIME_MS ? 1 : this.losses + 1;
    this.lastLossAt = now;
    this.restartOwed = true;
    this.log.warn({ err: reason }, 'modern upstream child lost');
  }

  private async backoff(scope: CallScope): Promise<void> {
    if (this.losses === 0) return;
    const first = this.opts.restartBackoffMs ?? 100;
    const max = this.opts.maxRestartBackoffMs ?? 5_000;
    const wait = Math.min(first * 2 ** (this.losses - 1), max) - (Date.now() - this.lastLossAt);
    if (wait > 0) await scope.sleep(wait);
  }
}

/** `p`, or the signal's reason as soon as it is aborted (the start goes on for the next request). */
function waitFor<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The last `data:` of an SSE text: a stream's response. */
function lastData(text: string): string | undefined {
  const lines = text.split('\n').filter((l) => l.startsWith('data: '));
  return lines.at(-1)?.slice('data: '.length);
}
