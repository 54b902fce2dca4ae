// A mount: what one path of the data port serves. A single-upstream mount hands modern requests
// to the pipeline and legacy ones to the passthrough; a federated mount answers modern requests
// through its Federation and serves no legacy clients.

import type { LegacyPassthrough } from '../passthrough/legacy.js';
import { handleModern, type ModernDeps, type ModernExchange } from '../pipeline.js';
import type { Federation } from './federation.js';

export interface Mount {
  readonly path: string;
  /** Where legacy clients go; undefined on a federated mount. */
  readonly passthrough: LegacyPassthrough | undefined;
  serveModern(ex: ModernExchange): Promise<void>;
}

export function singleMount(path: string, deps: ModernDeps, passthrough: LegacyPassthrough): Mount {
  return { path, passthrough, serveModern: (ex) => handleModern(ex, deps) };
}

export function federatedMount(federation: Federation): Mount {
  return { path: federation.path, passthrough: undefined, serveModern: (ex) => federation.serve(ex) };
}
