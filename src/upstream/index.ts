export { relayCall, type CallObserver } from './call.js';
export { IdMinter } from './ids.js';
export { ForwardPolicy, DEFAULT_CREDENTIAL_HEADERS, HOP_BY_HOP } from './forward-headers.js';
export { enableLogging, refuseAsk, walkList } from './own-calls.js';
export { UpstreamClient, type SessionRef } from './legacy-client.js';
export { callHeaders } from './headers.js';
export { TargetSet, neverDelivered } from './targets.js';
export { SessionExpiredError, TargetUnreachableError, toUpstreamError } from './errors.js';
