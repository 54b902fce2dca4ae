// The contracts every part of upstream/ shares and builds on: what an upstream session client
// is (session-client.ts), its errors, request ids, the headers a request carries upstream, the
// places an upstream lives (targets.ts), the traced request, and the registry of the calls that
// take a session's outside asks (asking-calls.ts). It imports no other part of upstream/.

export {
  errorCode,
  isConnectionDrop,
  ResumeRefusedError,
  SessionExpiredError,
  TargetUnreachableError,
  toUpstreamError,
} from './errors.js';
export {
  callHeaders,
  isValidSessionId,
  sessionDigest,
  type SessionRef,
  upstreamHeaders,
  type UpstreamRequestKind,
} from './headers.js';
export { IdMinter } from './ids.js';
export { losesSession, REFUSAL_BODY_LIMIT } from './lost-session.js';
export type {
  AskingCall,
  HandshakeResult,
  InitializeParams,
  StreamHandlers,
  UpstreamSessionClient,
} from './session-client.js';
export { neverDelivered, TargetSet } from './targets.js';
export { tracedRequest } from './traced-request.js';
export { timedRequest, Work, type RequestResult, type RequestScope } from './work.js';
export {
  ASKING_METHODS,
  type AskEntry,
  type AskRelay,
  type AskRouting,
  type LocalAsks,
  OutsideAsks,
} from './asking-calls.js';
