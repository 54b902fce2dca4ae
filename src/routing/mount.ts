// A mount: what one path of the data port serves. A single-upstream mount hands modern requests
// to the pipeline and legacy ones to the passthrough; a federated mount answers modern requests
// through its Federation and serves no legacy clients. Plain data: the composition root builds it.

import type { LegacyPassthrough } from '../passthrough/index.js';
import type { ModernExchange } from '../pipeline.js';

export interface Mount {
  readonly path: string;
  /** Where legacy clients go; undefined on a federated mount. */
  readonly passthrough: LegacyPassthrough | undefined;
  serveModern(ex: ModernExchange): Promise<void>;
}
