// Transport failures from undici and node:net become CausewayErrors through one table, the original
// kept as `cause`. Failing to reach the upstream is upstream_unavailable, a slow or malformed answer
// upstream_timeout or upstream_bad_response, a request undici refuses to send our own internal_error.
// SessionExpiredError is the one failure callers recover from: the upstream answered 404 to a
// request bearing a session id, so re-initialize.

import { CausewayError, type ErrorReason } from '../../errors.js';

export const TRANSPORT_ERROR_REASONS: Readonly<Record<string, ErrorReason>> = Object.freeze({
  UND_ERR_CONNECT_TIMEOUT: 'upstream_unavailable',
  UND_ERR_HEADERS_TIMEOUT: 'upstream_timeout',
  UND_ERR_BODY_TIMEOUT: 'upstream_timeout',
  UND_ERR_SOCKET: 'upstream_unavailable',
  UND_ERR_ABORTED: 'upstream_unavailable',
  UND_ERR_ABORT: 'upstream_unavailable',
  UND_ERR_DESTROYED: 'upstream_unavailable',
  UND_ERR_CLOSED: 'upstream_unavailable',
  UND_ERR_INFO: 'upstream_unavailable',
  UND_ERR_HEADERS_OVERFLOW: 'upstream_bad_response',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'upstream_bad_response',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'upstream_bad_response',
  UND_ERR_RESPONSE: 'upstream_bad_response',
  ECONNREFUSED: 'upstream_unavailable',
  ECONNRESET: 'upstream_unavailable',
  ECONNABORTED: 'upstream_unavailable',
  EPIPE: 'upstream_unavailable',
  ETIMEDOUT: 'upstream_unavailable',
  EHOSTUNREACH: 'upstream_unavailable',
  ENETUNREACH: 'upstream_unavailable',
  ENOTFOUND: 'upstream_unavailable',
  EAI_AGAIN: 'upstream_unavailable',
  UND_ERR_INVALID_ARG: 'internal_error',
  UND_ERR_NOT_SUPPORTED: 'internal_error',
});

/** llhttp parse errors (HPE_INVALID_CONSTANT, ...) are too many to list: the upstream spoke bad HTTP. */
const HTTP_PARSER_PREFIX = 'HPE_';

export class SessionExpiredError extends Error {
  readonly upstream: string;

  constructor(upstream: string, options?: { cause?: unknown }) {
    super(`Upstream ${upstream} no longer knows the session`, options);
    this.name = 'SessionExpiredError';
    this.upstream = upstream;
  }
}

/**
 * The session's upstream replica could not be reached, so the request never left: the pool may
 * open a session on another replica and send it there.
 */
export class TargetUnreachableError extends SessionExpiredError {
  constructor(upstream: string, cause: unknown) {
    super(upstream, { cause });
    this.name = 'TargetUnreachableError';
    this.message = `Upstream ${upstream} could not be reached`;
  }
}

/** A call's stream could not be taken up again (GET + Last-Event-ID refused with `status`): nothing of it was read. */
export class ResumeRefusedError extends CausewayError {
  /** The upstream's HTTP status for the GET (`status` is the error's own, for the client). */
  readonly httpStatus: number;

  constructor(upstream: string, httpStatus: number) {
    super('upstream_unavailable', `Upstream ${upstream} refused to resume the call's stream (HTTP ${httpStatus})`);
    this.name = 'ResumeRefusedError';
    this.httpStatus = httpStatus;
  }
}

export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

export function reasonForTransportError(err: unknown): ErrorReason | undefined {
  const code = errorCode(err);
  if (code === undefined) return undefined;
  if (code.startsWith(HTTP_PARSER_PREFIX)) return 'upstream_bad_response';
  return TRANSPORT_ERROR_REASONS[code] ?? 'upstream_unavailable';
}

/**
 * CausewayError and SessionExpiredError pass through; a coded transport error is mapped by the
 * table (an unlisted code is upstream_unavailable); anything else is a bug and is returned as is.
 */
export function toUpstreamError(err: unknown): unknown {
  if (err instanceof CausewayError || err instanceof SessionExpiredError) return err;
  const reason = reasonForTransportError(err);
  if (reason === undefined) return err;
  return new CausewayError(reason, undefined, undefined, { cause: err });
}

/** A dropped or refused connection (not a timeout, not garbage): worth resuming a stream after. */
export function isConnectionDrop(err: unknown): boolean {
  return !(err instanceof CausewayError) && reasonForTransportError(err) === 'upstream_unavailable';
}
