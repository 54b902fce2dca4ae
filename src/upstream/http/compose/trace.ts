// The trace context of the request's span (tracing on) in traceparent, on each request to the
// upstream's own URLs; it replaces a traceparent forwarded from the client. Outermost: once per
// request, whatever the interceptors inside it retry.

import { injectHeaders } from '../../../tracing/index.js';
import { addressed, type Interceptor, type UpstreamRequest } from './dispatch.js';

export function traceInterceptor(): Interceptor {
  return (dispatch) =>
    function traced(opts, handler) {
      const req = opts as UpstreamRequest;
      if (addressed(req)) injectHeaders(req.headers);
      return dispatch(opts, handler);
    };
}
