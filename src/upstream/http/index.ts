// The Streamable HTTP session client: one HTTP exchange per request (legacy-client.ts), the
// handshake, the dispatcher that sends, the streams and SSE that answer, the messages they carry,
// and the call that relays one request with what belongs to it.

export { abandon, checkContentLength, discard, mediaType, readText, type ResponseBody } from './body.js';
export { CallScope, lendSignal, ScopeSet } from './call-scope.js';
export { CallDetached, type CallObserver, relayCall, type ResumePoint, resumeRelayedCall } from './call.js';
export { httpRefusal, readErrorBody, refusalOf, UpstreamDispatcher, type DispatcherEndpoint, type Response } from './dispatcher.js';
export { type Exchange, refusal } from './inbound.js';
export { UpstreamClient } from './legacy-client.js';
export { badResponse, classify, decodeMessages } from './messages.js';
export { DEFAULT_MAX_EVENT_BYTES, parseSse, type SseEvent, SseParser } from './sse.js';
