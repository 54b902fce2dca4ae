export { LegacyPassthrough, routingHeaders } from './legacy.js';
export { SessionBinding } from './session-binding.js';
export type { LegacyFace } from './legacy-face.js';
