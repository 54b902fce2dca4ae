// The legacy face of an upstream whose transport is found at first use (`transport: auto`): a
// legacy request waits for the detection, then goes to the byte passthrough (Streamable HTTP) or
// to the face serving a channel upstream (HTTP+SSE). Without such a face it is refused as on any
// mount whose upstream is not Streamable HTTP.

import { sendCausewayError } from '../egress/index.js';
import { causewayError, toCausewayError, type CausewayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { FoundTransport } from '../upstream/index.js';
import type { LegacyFace } from './legacy-face.js';

/** The answer to a legacy client on a mount whose upstream is served over a channel (stdio, HTTP+SSE). */
export function channelUpstreamRefusal(): CausewayError {
  return causewayError('invalid_request', 'Legacy clients are not served on this mount: its upstream is a stdio or HTTP+SSE server; use protocol 2026-07-28');
}

export interface AutoFaceOptions {
  /** The transport found, probing first when not known yet. */
  use(signal: AbortSignal): Promise<FoundTransport>;
  /** The face of a Streamable HTTP upstream. */
  passthrough: LegacyFace;
  /** The face of a channel upstream, built once when one is found; undefined: legacy clients are refused. */
  channelFace(found: FoundTransport): LegacyFace | undefined;
}

export class AutoLegacyFace implements LegacyFace {
  private channel: { face: LegacyFace | undefined } | undefined;

  constructor(
    private readonly opts: AutoFaceOptions,
    private readonly log: Logger,
  ) {}

  async forward(...args: Parameters<LegacyFace['forward']>): Promise<void> {
    const [, , , res, signal] = args;
    let found: FoundTransport;
    try {
      found = await this.opts.use(signal);
    } catch (err) {
      if (signal.aborted) return;
      this.log.warn({ err: (err as Error).message }, 'legacy request: the upstream transport could not be found');
      return sendCausewayError(res, toCausewayError(err), null);
    }
    const face = found.transport === 'streamable-http' ? this.opts.passthrough : (this.channel ??= { face: this.opts.channelFace(found) }).face;
    if (face === undefined) return sendCausewayError(res, channelUpstreamRefusal(), null);
    return face.forward(...args);
  }

  async close(): Promise<void> {
    await Promise.all([this.opts.passthrough.close(), this.channel?.face?.close()]);
  }
}
