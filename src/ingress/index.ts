export { createAdmin, type AdminStatus } from './admin.js';
export { drain } from './drain.js';
export { frontDoor, type FrontDoor, type FrontDoorGiven } from './front-door.js';
export type { Mount } from './mount.js';
export { createIngress } from './server.js';
export { RateLimiter } from './rate-limit.js';
