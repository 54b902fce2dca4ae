export { sendJson, sendResult, sendRpcError, sendCausewayError, sendStatus, sendText, errorBody, type HttpResponse } from './reply.js';
export { SseStream } from './stream.js';
