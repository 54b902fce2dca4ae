export {
  sendJson,
  sendResult,
  sendRpcError,
  sendCausewayError,
  sendStatus,
  sendText,
  errorBody,
  type HttpResponse,
} from './reply.js';
export { SseStream } from './stream.js';
export { H1Response, H2Response, newRequestId, tagResponse } from './request-id.js';
