export { sendJson, sendResult, sendRpcError, sendCausewayError, sendStatus, errorBody, type HttpResponse } from './reply.js';
export { SseStream } from './stream.js';
