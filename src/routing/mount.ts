// What a mount serves its modern requests with: its one upstream, through the pipeline, or the
// Federation of its members. The front door's Mount (ingress/mount.ts) is one of these with its
// path and legacy face.

import type { ModernDeps } from './exchange.js';
import type { Federation } from './federation.js';

export type ModernMount =
  | { readonly upstream: ModernDeps; readonly federation?: undefined }
  | { readonly federation: Federation; readonly upstream?: undefined };
