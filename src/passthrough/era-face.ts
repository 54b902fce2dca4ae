// The legacy face of an upstream whose era may be either: a legacy client's request goes to the
// face for a legacy upstream (the passthrough, or Causeway's own over a channel) or to the one
// Causeway serves over a modern upstream (translate/), as the upstream's era says (era.ts). A
// refused legacy initialize has the era found again: the server may have been upgraded in place.

import type { Logger } from '../log.js';
import type { UpstreamEra } from '../upstream/index.js';
import { refuseUnresolved, type LegacyFace, type LegacyRequest } from './legacy-face.js';

export class EraLegacyFace implements LegacyFace {
  constructor(
    private readonly era: UpstreamEra,
    private readonly legacy: LegacyFace,
    private readonly modern: LegacyFace,
    private readonly log: Logger,
  ) {}

  async forward(req: LegacyRequest): Promise<void> {
    const { res } = req;
    let era = this.era.current;
    if (era === undefined) {
      try {
        era = await this.era.era(req.signal);
      } catch (err) {
        return refuseUnresolved(req, err, this.log, 'legacy request: the upstream era could not be found');
      }
    }
    if (era === 'modern') return this.modern.forward(req);
    // A legacy server that refuses an initialize may have been upgraded in place: its era is found again.
    const body = req.body?.json;
    if (typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'initialize') {
      res.once('finish', () => {
        if (res.statusCode === 400) this.era.refused();
      });
    }
    return this.legacy.forward(req);
  }

  endStreams(): void {
    this.legacy.endStreams?.();
    this.modern.endStreams?.();
  }

  async close(): Promise<void> {
    await Promise.all([this.legacy.close(), this.modern.close()]);
  }
}
