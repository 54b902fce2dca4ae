// ioredis, loaded when a Redis store, bus or cache first makes a client: a replica without one
// (store.kind=memory, the default) never carries it. A CommonJS package, so it is required in step
// at start-up, and is the same module an `import` of it gives (tests make clients that way).

import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';

const require = createRequire(import.meta.url);
let loaded: typeof IORedis | undefined;

/** The ioredis module, loaded on first use. */
export function ioredis(): typeof IORedis {
  return (loaded ??= require('ioredis') as typeof IORedis);
}
