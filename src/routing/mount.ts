// What a mount serves its modern requests with: its one upstream, through the pipeline, or the
// Federation of its members. The front door's Mount (ingress/mount.ts) is one of these with its
// path and legacy face.

import type { ModernDeps, ModernExchange } from './exchange.js';
import type { Federation } from './federation.js';
import type { ViewFilter } from '../view/index.js';

/**
 * What a mount serves in front of its upstream or federation (its skills folder): it answers a
 * request itself, adds to the answer `next` gives, or hands the request on to `next` as it is.
 */
export interface MountFront {
  serve(ex: ModernExchange, next: (ex: ModernExchange) => Promise<void>): Promise<void>;
  /** Whether serve() does anything with `method`, or only hands it on. */
  serves(method: string): boolean;
}

/** What serves a mount's modern requests; `view`, when the mount has one, is what its clients see of it. */
export type ModernMount = (
  | { readonly upstream: ModernDeps; readonly federation?: undefined; readonly front?: MountFront }
  | { readonly federation: Federation; readonly upstream?: undefined; readonly front?: MountFront }
) & { readonly view?: ViewFilter };
