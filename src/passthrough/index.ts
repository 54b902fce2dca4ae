export { LegacyPassthrough, routingHeaders } from './legacy.js';
export { SessionBinding } from './session-binding.js';
