// The upstream wing's public entry: what the rest of src/ uses of it, from the folder that does
// each job (README.md draws them). Nothing inside upstream/ imports this file.

export {
  IdMinter,
  callHeaders,
  sessionDigest,
  tracedRequest,
  TargetSet,
  neverDelivered,
  isConnectionDrop,
} from './core/index.js';
export { losesSession, REFUSAL_BODY_LIMIT } from './core/index.js';
export { ResumeRefusedError, SessionExpiredError, TargetUnreachableError, toUpstreamError } from './core/index.js';
export type { SessionRef, StreamHandlers, UpstreamSessionClient } from './core/index.js';
export { ForwardPolicy, DEFAULT_CREDENTIAL_HEADERS, HOP_BY_HOP } from './forward-headers.js';
export { enableLogging, refuseAsk, walkList, type OwnCallDeps } from './own-calls.js';
export {
  UpstreamClient,
  lendSignal,
  CallDetached,
  relayCall,
  resumeRelayedCall,
  type CallObserver,
  type ResumePoint,
} from './http/index.js';
export {
  badResponse,
  cancelUpstream,
  httpRefusal,
  legacyParams,
  postedTo,
  tooLarge,
  UPSTREAM_CLIENT_DEFAULTS,
  type DirectCall,
  type DirectTally,
  type UpstreamMessage,
} from './http/index.js';
export type { RequestResult } from './core/index.js';
export { UpstreamHttp, type Response, type UpstreamRequest } from './http/index.js';
export { abandon, checkContentLength, decodeMessages, discard, mediaType, readText } from './http/index.js';
export { readRefusal, type ResponseBody, parseSse, type SseEvent, sseTextMessages, sseMessages } from './http/index.js';
export { AnswerReader, type AnswerLimits } from './http/index.js';
export { ChannelClient, StdioOpener, SseChannelOpener, type SseChannelOptions } from './channel/index.js';
export {
  detectTransport,
  TransportMemo,
  type Detected,
  type DetectOptions,
  type LegacyTransport,
} from './channel/index.js';
export { AutoClient, type AutoClientOptions, type FoundTransport } from './channel/index.js';
export type { ChannelOpener, MessageChannel } from './channel/index.js';
export { ReplicaRelay, type RelayOptions, ReplicaAsks } from './replicas/index.js';
export { OutsideAsks } from './core/index.js';
export { OutsideAskers, type SharedAskers } from './replicas/index.js';
export { UpstreamCredentials, type SubjectSource, type UpstreamAuthorization } from './credentials/index.js';
export { SignInCallback, UpstreamSignIn, type Sealer, MemoryGrants, type GrantStore } from './credentials/index.js';
export {
  ERAS,
  eraOf,
  MemoryEraMemo,
  MODERN_VERSION,
  RedisEraMemo,
  ModernClient,
  RelayedListens,
  UpstreamEra,
  isEraRefusal,
  type Era,
  type EraMemo,
  type EraSetting,
  type EraSource,
  type ProbeAnswer,
} from './modern/index.js';
export { httpWire, type ModernAnswer, type ModernCallOptions, type ModernWire } from './modern/index.js';
export { UpstreamDispatcher } from './http/index.js';
export { ModernStdioPool, type ModernStdioOptions } from './modern-stdio/index.js';
export { AnswerBody } from './modern/index.js';
