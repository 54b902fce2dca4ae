// Where undici's request API enters the composed chain. Its handler speaks undici's old handler
// interface (onConnect, onHeaders, ...), the interceptors the new one; compose() would bridge
// the two with a WrapHandler per request that encodes the parsed response headers back into
// Buffers for request() to parse again. The Bridge here is that bridge, handing request() the
// raw headers the socket delivered (no interceptor here rewrites them): composed, a request
// allocates about what it does on a bare Agent.

import { Dispatcher, type Controller, type Handler } from './dispatch.js';

export class RequestEntry extends Dispatcher {
  /** Closed through the UpstreamHttp that made it. */
  constructor(private readonly chain: Dispatcher) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Handler): boolean {
    return this.chain.dispatch(options, new Bridge(handler));
  }
}

/** request()'s handler: its onConnect takes the request's context too, as undici calls it. */
type OldHandler = Omit<Handler, 'onConnect'> & { onConnect?(abort: (reason?: Error) => void, context: unknown): void };

/** The old interface of request()'s handler, driven by the new one the interceptors call. */
class Bridge implements Handler {
  constructor(private readonly handler: OldHandler) {}

  onRequestStart(controller: Controller, context: unknown): void {
    this.handler.onConnect?.((reason) => controller.abort(reason as Error), context);
  }

  onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: Parameters<NonNullable<Handler['onResponseStart']>>[2],
    statusMessage?: string,
  ): void {
    const raw = Array.isArray(controller.rawHeaders) ? (controller.rawHeaders as Buffer[]) : rawOf(headers);
    if (this.handler.onHeaders?.(statusCode, raw, () => controller.resume(), statusMessage as string) === false)
      controller.pause();
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.handler.onData?.(chunk) === false) controller.pause();
  }

  onResponseEnd(controller: Controller, trailers: Parameters<NonNullable<Handler['onResponseEnd']>>[1]): void {
    this.handler.onComplete?.(
      Array.isArray(controller.rawTrailers)
        ? (controller.rawTrailers as string[])
        : (rawOf(trailers) as unknown as string[]),
    );
  }

  onResponseError(_controller: Controller, err: Error): void {
    this.handler.onError?.(err);
  }
}

/** Headers as the old interface has them, for a controller that kept no raw ones. */
function rawOf(headers: Record<string, string | string[] | undefined>): Buffer[] {
  const raw: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value])
      raw.push(Buffer.from(name, 'latin1'), Buffer.from(v, 'latin1'));
  }
  return raw;
}
