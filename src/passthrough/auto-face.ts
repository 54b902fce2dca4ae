// The legacy face of an upstream whose transport is found at first use (`transport: auto`): a
// legacy request waits for the detection, then goes to the byte passthrough (Streamable HTTP) or
// to the face serving a channel upstream (HTTP+SSE).

import type { Logger } from '../log.js';
import type { FoundTransport } from '../upstream/index.js';
import { refuseUnresolved, type LegacyFace, type LegacyRequest } from './legacy-face.js';

export interface AutoFaceOptions {
  /** The transport found, probing first when not known yet. */
  use(signal: AbortSignal): Promise<FoundTransport>;
  /** The face of a Streamable HTTP upstream. */
  passthrough: LegacyFace;
  /** The face of a channel upstream, built once when one is found. */
  channelFace(found: FoundTransport): LegacyFace;
}

export class AutoLegacyFace implements LegacyFace {
  private channel: LegacyFace | undefined;

  constructor(
    private readonly opts: AutoFaceOptions,
    private readonly log: Logger,
  ) {}

  async forward(req: LegacyRequest): Promise<void> {
    let found: FoundTransport;
    try {
      found = await this.opts.use(req.signal);
    } catch (err) {
      return refuseUnresolved(req, err, this.log, 'legacy request: the upstream transport could not be found');
    }
    const face =
      found.transport === 'streamable-http' ? this.opts.passthrough : (this.channel ??= this.opts.channelFace(found));
    return face.forward(req);
  }

  endStreams(): void {
    this.channel?.endStreams?.();
  }

  async close(): Promise<void> {
    await Promise.all([this.opts.passthrough.close(), this.channel?.close()]);
  }
}
