export { LegacyPassthrough, routingHeaders } from './legacy.js';
export { SessionBinding } from './session-binding.js';
export type { LegacyFace } from './legacy-face.js';
export { AutoLegacyFace, channelUpstreamRefusal, type AutoFaceOptions } from './auto-face.js';
