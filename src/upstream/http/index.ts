// The Streamable HTTP session client: one HTTP exchange per request (legacy-client.ts), the
// handshake, a POST and its answer (exchange.ts), the one reader of the upstream's answers, JSON
// or SSE (reader.ts), the streams that answer, the messages they carry, the call that relays one
// request with what belongs to it, and the upstream's one composed HTTP client (compose/) that
// every HTTP request to the upstream goes through.

export {
  abandon,
  checkContentLength,
  discard,
  finish,
  mediaType,
  readRefusal,
  readText,
  type ResponseBody,
} from './body.js';
export { CallScope, lendSignal, ScopeSet } from './call-scope.js';
export {
  CallDetached,
  type CallObserver,
  cancelUpstream,
  legacyParams,
  relayCall,
  type ResumePoint,
  resumeRelayedCall,
} from './call.js';
export {
  type Dispatcher,
  type Response,
  UpstreamHttp,
  type UpstreamHttpOptions,
  type UpstreamRequest,
} from './compose/index.js';
export {
  httpRefusal,
  LONG_LIVED,
  MOVABLE,
  postedTo,
  readErrorBody,
  refusalOf,
  UpstreamDispatcher,
} from './dispatcher.js';
export { type Exchange, refusal } from './inbound.js';
export { tooLarge } from './body.js';
export { type DirectCall, type DirectTally, UPSTREAM_CLIENT_DEFAULTS, UpstreamClient } from './legacy-client.js';
export { badResponse, classify, classifyOrDrop, decodeMessages, type UpstreamMessage } from './inbound.js';
export { AnswerReader, type AnswerLimits, DEFAULT_MAX_EVENT_BYTES } from './reader.js';
export { parseSse, type SseEvent, sseMessages, sseTextMessages } from './reader.js';
