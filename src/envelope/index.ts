export { classifyPost, type Classified, type ModernRequest, type Rejection, type InboundPost } from './classify.js';
export {
  checkOrigin,
  hostName,
  isValidAuthority,
  originPolicy,
  isLoopbackAddress,
  type OriginPolicy,
} from './origin.js';
export {
  paramHeaders,
  readParamHeaders,
  checkParamHeaders,
  mayNeedParamHeaders,
  mirroredParamHeaders,
  decodeHeaderValue,
  encodeHeaderValue,
  type HeaderBag,
  type ParamHeader,
} from './headers.js';
export { callName, methodSpec, MODERN_METHODS, LEGACY_METHODS, type MethodSpec } from './methods.js';
export {
  capabilitiesText,
  levelAtLeast,
  LOG_LEVELS,
  META_CLIENT_INFO,
  META_VERSION,
  META_SERVER_INFO,
  META_SUBSCRIPTION_ID,
  type LogLevel,
  type RequestMeta,
} from './meta.js';
export { MODERN_VERSIONS, LEGACY_VERSIONS, sendsVersionHeader, revisionLabel } from './versions.js';
export { invalidCursor, readCursorFields } from './cursor.js';
