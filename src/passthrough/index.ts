export { LegacyPassthrough, legacyName, routingHeaders } from './legacy.js';
export { SessionBinding } from './session-binding.js';
export { ChannelLegacyFace, type ChannelFaceOptions } from './channel-face.js';
export {
  acceptsSse,
  keepAlive,
  readInitializeParams,
  readLegacyMessage,
  sessionGone,
  type LegacyBody,
  type LegacyFace,
  type LegacyRequest,
} from './legacy-face.js';
export { AutoLegacyFace, type AutoFaceOptions } from './auto-face.js';
export { EraLegacyFace } from './era-face.js';
export { relayModern, refusedAnswer, type ModernRelayDeps, type ModernRelayRequest, type Relayed } from './modern.js';
export { ViewLegacyFace } from './view-face.js';
