export { CallDetached, relayCall, resumeRelayedCall, type CallObserver, type ResumePoint } from './call.js';
export { IdMinter } from './ids.js';
export { ForwardPolicy, DEFAULT_CREDENTIAL_HEADERS, HOP_BY_HOP } from './forward-headers.js';
export { enableLogging, refuseAsk, walkList } from './own-calls.js';
export { UpstreamClient, type SessionRef } from './legacy-client.js';
export { callHeaders } from './headers.js';
export { TargetSet, neverDelivered } from './targets.js';
export { ResumeRefusedError, SessionExpiredError, TargetUnreachableError, toUpstreamError } from './errors.js';
