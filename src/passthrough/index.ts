export { LegacyPassthrough, legacyName, routingHeaders } from './legacy.js';
export { SessionBinding } from './session-binding.js';
export { ChannelLegacyFace, type ChannelFaceOptions } from './channel-face.js';
export type { LegacyBody, LegacyFace } from './legacy-face.js';
export { AutoLegacyFace, type AutoFaceOptions } from './auto-face.js';
