// A mount: what one path of the data port serves. A single-upstream mount's modern requests go
// through the pipeline on its upstream and its legacy ones to its legacy face (the byte
// passthrough, or Causeway's own legacy protocol over a stdio or HTTP+SSE upstream); a federated
// mount answers modern requests through its Federation, and legacy ones with the translated
// legacy face over that. Plain data:
// the composition root builds it, the front door serves legacy requests from it and hands it to
// the pipeline (as routing's ModernMount) for modern ones.

import type { LegacyFace } from '../passthrough/index.js';
import type { Federation, ModernDeps, MountFront } from '../routing/index.js';
import type { WarmLane } from '../warm/index.js';
import type { ViewFilter } from '../view/index.js';

export type Mount = (
  | {
      readonly path: string;
      readonly passthrough: LegacyFace;
      readonly upstream: ModernDeps;
      readonly federation?: undefined;
      readonly front?: MountFront;
      /** The straight path of a warm call, on a Streamable HTTP upstream (tracing off). */
      readonly warm?: WarmLane;
    }
  | {
      readonly path: string;
      readonly passthrough: LegacyFace;
      readonly federation: Federation;
      readonly upstream?: undefined;
      readonly front?: MountFront;
      readonly warm?: undefined;
    }
) & {
  /** mounts.<path>.tools, .prompts, .resources: what its clients see (a virtual server); no warm lane then. */
  readonly view?: ViewFilter;
};
