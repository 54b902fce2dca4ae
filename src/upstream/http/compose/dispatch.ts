// What a request through an upstream's composed client is: undici's dispatch (this is where
// undici enters the folder), the options Causeway's interceptors read besides undici's own, and
// the handler the interceptors that watch an answer build on.

import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

export { Agent, Dispatcher } from 'undici';

/** `opaque`: what the sender gave with the request (UpstreamDispatcher: where it went). */
export type Response = Dispatcher.ResponseData<unknown>;
export type Handler = Dispatcher.DispatchHandler;
export type Controller = Dispatcher.DispatchController;
export type Dispatch = Dispatcher.Dispatch;
export type Interceptor = Dispatcher.DispatcherComposeInterceptor;

/**
 * A request to one of the upstream's own URLs. `target` or `failover` addresses it there: only
 * such a request gets the upstream's credential, the trace context and the URL's health kept;
 * any other (an HTTP+SSE stream, a transport probe) passes the interceptors as it is.
 */
export interface UpstreamRequest extends Omit<Dispatcher.RequestOptions<unknown>, 'origin' | 'path' | 'headers'> {
  origin?: string;
  path?: string;
  headers: Record<string, string>;
  /** The URL it goes to: one of the upstream's (a session's). */
  target?: string;
  /**
   * No target yet (a new legacy session): the next admitted URL, the one after while one cannot be reached; `target` is
   * set once one answers.
   */
  failover?: boolean;
  /** Whose upstream credential it is sent with (a principal hash). */
  principal?: string;
  /** A failure to reach the target is a TargetUnreachableError: nothing was sent, so the session may move. */
  movable?: boolean;
}

/** Addressed to the upstream's own URLs (see UpstreamRequest). */
export function addressed(opts: UpstreamRequest): boolean {
  return opts.target !== undefined || opts.failover === true;
}

/** Passes every event on to the next handler; an interceptor's handler overrides what it watches. */
export class Decorator implements Handler {
  constructor(protected readonly next: Handler) {}

  onRequestStart(controller: Controller, context: unknown): void {
    this.next.onRequestStart?.(controller, context);
  }

  onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusMessage?: string,
  ): void {
    this.next.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    this.next.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Controller, trailers: IncomingHttpHeaders): void {
    this.next.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Controller, err: Error): void {
    this.next.onResponseError?.(controller, err);
  }
}
