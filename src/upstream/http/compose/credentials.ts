// The upstream's credential on each request to its own URLs (Causeway's token, or the user's:
// credentials/), and the one retry a 401 earns. A 401 is the upstream refusing the token before
// doing anything (expired early, revoked, its keys rotated, or the user has yet to sign in): the
// credential says whether to try once more with a new one, or answers with an error of its own
// (the user has to sign in). Meanwhile the 401 is held; one retried or answered is read away
// first, one not retried reaches the caller as it came.

import type { UpstreamAuthorization } from '../../credentials/index.js';
import {
  addressed,
  Decorator,
  type Controller,
  type Dispatch,
  type Handler,
  type Interceptor,
  type UpstreamRequest,
} from './dispatch.js';

/** The most of a refused answer read away; past it the connection is dropped instead. */
const READ_AWAY_LIMIT = 128 * 1024;

export function credentialsInterceptor(credentials: UpstreamAuthorization): Interceptor {
  return (dispatch) =>
    function credentialed(opts, handler) {
      const req = opts as UpstreamRequest;
      if (!addressed(req)) return dispatch(opts, handler);
      void new Authorized(handler, dispatch, credentials, req).attempt();
      return true;
    };
}

/** A 401's headers, held while the credential decides. */
interface Held {
  headers: Parameters<Decorator['onResponseStart']>[2];
  statusMessage: string | undefined;
  /** The held answer failed meanwhile. */
  lost?: Error;
}

/**
 * One request and its retry. The caller's handler sees one request: this is its controller, and
 * passes pause, resume and abort to the try under way (an abort between tries stops the next).
 */
class Authorized extends Decorator implements Controller {
  /** The headers as the caller built them, without the credential. */
  private readonly headers: Record<string, string>;
  private sent: string | undefined;
  private tries = 0;
  private current: Controller | undefined;
  private started = false;
  private held: Held | undefined;
  /** What the credential answered a 401 with: a new try (undefined) or its error; set while the 401 is read away. */
  private readingAway: { failure: Error | undefined; bytes: number } | undefined;
  private done = false;
  reason: Error | null = null;

  constructor(
    next: Handler,
    private readonly dispatch: Dispatch,
    private readonly credentials: UpstreamAuthorization,
    private readonly req: UpstreamRequest,
  ) {
    super(next);
    this.headers = req.headers;
  }

  get aborted(): boolean {
    return this.reason !== null;
  }

  get paused(): boolean {
    return this.current?.paused ?? false;
  }

  get rawHeaders(): Controller['rawHeaders'] {
    return this.current?.rawHeaders;
  }

  get rawTrailers(): Controller['rawTrailers'] {
    return this.current?.rawTrailers;
  }

  abort(reason: Error): void {
    this.reason = reason;
    this.current?.abort(reason);
  }

  pause(): void {
    this.current?.pause();
  }

  resume(): void {
    this.current?.resume();
  }

  async attempt(): Promise<void> {
    this.tries += 1;
    try {
      const authorization = await this.credentials.authorization(this.req.principal);
      this.sent = authorization;
      this.req.headers = authorization === undefined ? this.headers : { ...this.headers, authorization };
      this.dispatch(this.req as Parameters<Dispatch>[0], this);
    } catch (err) {
      this.finish(err as Error);
    }
  }

  override onRequestStart(controller: Controller, context: unknown): void {
    this.current = controller;
    if (this.reason !== null) controller.abort(this.reason);
    else if (!this.started) {
      this.started = true;
      this.next.onRequestStart?.(this, context);
    }
  }

  override onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: Held['headers'],
    statusMessage?: string,
  ): void {
    if (statusCode !== 401) {
      this.next.onResponseStart?.(this, statusCode, headers, statusMessage);
      return;
    }
    controller.pause();
    this.held = { headers, statusMessage };
    void this.decide(controller, this.held);
  }

  override onResponseData(controller: Controller, chunk: Buffer): void {
    const away = this.readingAway;
    if (away === undefined) this.next.onResponseData?.(this, chunk);
    else if ((away.bytes += chunk.length) > READ_AWAY_LIMIT)
      controller.abort(new Error('refused answer too long to read away'));
  }

  override onResponseEnd(_controller: Controller, trailers: Held['headers']): void {
    if (this.readingAway) this.readAway();
    else this.next.onResponseEnd?.(this, trailers);
  }

  override onResponseError(_controller: Controller, err: Error): void {
    if (this.reason === null) {
      if (this.held) {
        this.held.lost = err;
        return;
      }
      if (this.readingAway) return this.readAway();
    }
    this.finish(err);
  }

  /** Asks the credential about the 401 `held`, then retries, answers with its error or relays the 401. */
  private async decide(controller: Controller, held: Held): Promise<void> {
    let failure: Error | undefined;
    let retry: boolean;
    try {
      retry = await this.credentials.refused(this.req.principal, this.sent, this.tries === 2);
    } catch (err) {
      failure = err as Error;
      retry = false;
    }
    this.held = undefined;
    if (this.done) return;
    if (!retry && failure === undefined) {
      if (held.lost) return this.finish(held.lost);
      this.next.onResponseStart?.(this, 401, held.headers, held.statusMessage);
      controller.resume();
      return;
    }
    this.readingAway = { failure, bytes: 0 };
    if (held.lost) this.readAway();
    else controller.resume();
  }

  private readAway(): void {
    const failure = this.readingAway!.failure;
    this.readingAway = undefined;
    if (failure !== undefined) this.finish(failure);
    else void this.attempt();
  }

  private finish(err: Error): void {
    if (this.done) return;
    this.done = true;
    this.next.onResponseError?.(this, err);
  }
}
