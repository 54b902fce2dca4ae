// What the front door hands a legacy client's request to (dual era): the byte passthrough to a
// Streamable HTTP upstream (legacy.ts), or a face that serves the legacy protocol itself over
// an upstream whose sessions are Causeway's own (stdio, HTTP+SSE).

import type { IncomingHttpHeaders } from 'node:http';
import type { HttpResponse } from '../egress/index.js';

export interface LegacyFace {
  /** A legacy POST (with its body), GET stream or DELETE; answers on `res`, never throws. */
  forward(
    method: string,
    headers: IncomingHttpHeaders,
    body: Buffer | undefined,
    res: HttpResponse,
    signal: AbortSignal,
    extraHeaders?: Record<string, string>,
  ): Promise<void>;
  /** Lets go of connections or sessions once the requests in flight are done. */
  close(): Promise<void>;
}
