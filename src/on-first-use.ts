// A CommonJS dependency loaded when first used, not at start: a replica whose settings never ask
// for it (ioredis without Redis, yaml without skills) never carries it. Required in step, so the
// first use must come at start-up or reload, never on a request.

import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The package `name`, required the first time the function is called and kept from then on. */
export function onFirstUse<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}
