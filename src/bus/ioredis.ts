// ioredis, loaded when a Redis store, bus or cache first makes a client (store.kind=memory, the
// default, never does). The same module an `import` of it gives: tests make clients that way.

import type * as IORedis from 'ioredis';
import { onFirstUse } from '../on-first-use.js';

export const ioredis = onFirstUse<typeof IORedis>('ioredis');
