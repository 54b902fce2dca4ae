// A mount: what one path of the data port serves. A single-upstream mount's modern requests go
// through the pipeline on its upstream and its legacy ones to the passthrough; a federated mount
// answers modern requests through its Federation and serves no legacy clients, nor does a mount
// of a stdio upstream. Plain data: the
// composition root builds it, the front door hands it to the pipeline.

import type { LegacyFace } from '../passthrough/index.js';
import type { ModernDeps } from '../pipeline.js';
import type { Federation } from './federation.js';

export type Mount =
  /** passthrough is undefined when the upstream is a stdio or HTTP+SSE server: its sessions are Causeway's own, legacy clients get a 400. */
  | { readonly path: string; readonly passthrough: LegacyFace | undefined; readonly upstream: ModernDeps; readonly federation?: undefined }
  | { readonly path: string; readonly passthrough: undefined; readonly federation: Federation; readonly upstream?: undefined };
