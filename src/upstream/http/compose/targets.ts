// URL health and failover (core/targets.ts) for a request to one of the upstream's own URLs. It
// goes to its target's origin and path (parsed once); any answer tells the TargetSet the URL is
// up, a failure that proves nothing was delivered that it is not (the caller's own abort proves
// nothing). A request with no target yet goes to the next admitted URL, and on to the next while
// one cannot be reached; the URL that answers becomes its target. Innermost: every retry of the
// interceptors outside it counts toward the URL's health.

import { neverDelivered, TargetUnreachableError, type TargetSet } from '../../core/index.js';
import {
  addressed,
  Decorator,
  type Controller,
  type Dispatch,
  type Handler,
  type Interceptor,
  type UpstreamRequest,
} from './dispatch.js';

/** One upstream's URLs, parsed once, and the dispatch a request is sent on (and failed over on). */
interface Routes {
  upstream: string;
  targets: TargetSet;
  places: ReadonlyMap<string, { origin: string; path: string }>;
  dispatch: Dispatch;
}

const NONE: ReadonlySet<string> = new Set();

export function targetsInterceptor(upstream: string, targets: TargetSet): Interceptor {
  const places = new Map<string, { origin: string; path: string }>();
  for (const u of targets.urls) {
    const url = new URL(u);
    places.set(u, { origin: url.origin, path: `${url.pathname}${url.search}` });
  }
  return (dispatch) => {
    const routes: Routes = { upstream, targets, places, dispatch };
    return function routed(opts, handler) {
      const req = opts as UpstreamRequest;
      if (!addressed(req)) return dispatch(opts, handler);
      const picked = req.target === undefined;
      const url = req.target ?? targets.pick(NONE);
      if (!aim(routes, req, url))
        throw new TargetUnreachableError(
          upstream,
          new Error('the session lives on a URL this upstream no longer lists'),
        );
      return dispatch(opts, new Routed(handler, routes, req, url, picked));
    };
  };
}

/** Points `req` at `url`; false when the URL is not one of the upstream's. */
function aim(routes: Routes, req: UpstreamRequest, url: string): boolean {
  const place = routes.places.get(url);
  if (!place) return false;
  req.origin = place.origin;
  req.path = place.path;
  return true;
}

class Routed extends Decorator {
  /** The request was written: whatever fails now may have reached the upstream. */
  private started = false;
  private tried: Set<string> | undefined;

  constructor(
    next: Handler,
    private readonly routes: Routes,
    private readonly req: UpstreamRequest,
    private url: string,
    /** The URL was picked here (no target was given): another may be tried. */
    private readonly picked: boolean,
  ) {
    super(next);
  }

  override onRequestStart(controller: Controller, context: unknown): void {
    this.started = true;
    super.onRequestStart(controller, context);
  }

  override onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: Parameters<Decorator['onResponseStart']>[2],
    statusMessage?: string,
  ): void {
    this.routes.targets.succeeded(this.url);
    if (this.picked) this.req.target = this.url;
    super.onResponseStart(controller, statusCode, headers, statusMessage);
  }

  override onResponseError(controller: Controller, err: Error): void {
    const { req, routes } = this;
    if (!(req.signal as AbortSignal | undefined)?.aborted && neverDelivered(err)) {
      routes.targets.failed(this.url);
      if (this.picked && !this.started && this.failOver()) return;
      if (req.movable) err = new TargetUnreachableError(routes.upstream, err);
    }
    super.onResponseError(controller, err);
  }

  /** Sends the request to the next URL not tried yet; false when every one was. */
  private failOver(): boolean {
    const { targets, dispatch } = this.routes;
    const tried = (this.tried ??= new Set());
    tried.add(this.url);
    if (tried.size >= targets.size) return false;
    this.url = targets.pick(tried);
    aim(this.routes, this.req, this.url);
    // Not from inside undici's own error path: the next URL may share the failed one's origin.
    queueMicrotask(() => dispatch(this.req as Parameters<Dispatch>[0], this));
    return true;
  }
}
