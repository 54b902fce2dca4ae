// Every error Causeway itself answers with is a CausewayError, made here from one table:
// a stable snake_case reason -> JSON-RPC code, HTTP status and default message. Errors the
// upstream returned in-band are not CausewayErrors; they are relayed by the dialect on HTTP 200.

import type { JsonValue } from './jsonrpc.js';
import { MODERN_VERSION } from './version.js';

export const ERROR_TABLE = {
  // Front door and envelope: the client's request is at fault.
  parse_error: { code: -32700, status: 400, message: 'Parse error' },
  invalid_request: { code: -32600, status: 400, message: 'Invalid request' },
  batch_not_supported: { code: -32600, status: 400, message: 'Batch requests are not supported' },
  body_too_large: { code: -32600, status: 413, message: 'Request body too large' },
  request_timeout: { code: -32600, status: 408, message: 'Request body not received in time' },
  not_acceptable: {
    code: -32600,
    status: 406,
    message: 'Accept must list application/json and text/event-stream',
  },
  unsupported_media_type: { code: -32600, status: 415, message: 'Content-Type must be application/json' },
  forbidden_origin: { code: -32600, status: 403, message: 'Origin not allowed' },
  bad_host: { code: -32600, status: 400, message: 'Exactly one valid Host header is required' },
  forbidden_host: { code: -32600, status: 403, message: 'Host not allowed' },
  method_not_allowed: { code: -32600, status: 405, message: 'Method not allowed' },
  not_found: { code: -32600, status: 404, message: 'Not found' },
  missing_meta: { code: -32602, status: 400, message: 'Missing required _meta' },
  invalid_params: { code: -32602, status: 400, message: 'Invalid params' },
  header_mismatch: { code: -32020, status: 400, message: 'Header mismatch' },
  missing_client_capability: { code: -32021, status: 400, message: 'Missing required client capability' },
  unsupported_protocol_version: { code: -32022, status: 400, message: 'Unsupported protocol version' },
  method_not_found: { code: -32601, status: 404, message: 'Method not found' },
  // The resource server: no usable access token (401), or one without the scopes needed (403).
  unauthorized: { code: -32600, status: 401, message: 'Authorization required' },
  invalid_token: { code: -32600, status: 401, message: 'Invalid access token' },
  invalid_dpop_proof: { code: -32600, status: 401, message: 'Invalid DPoP proof' },
  insufficient_scope: { code: -32600, status: 403, message: 'Insufficient scope' },
  // limits.ratePerSecond: this principal's bucket is empty; Retry-After says when a token is due.
  rate_limited: { code: -32000, status: 429, message: 'Rate limit exceeded' },
  quota_exceeded: { code: -32000, status: 429, message: 'Quota exceeded' },
  // As an upstream answers an unknown tool, prompt or resource: in-band, on HTTP 200 [RES].
  unknown_name: { code: -32602, status: 200, message: 'Unknown name' },
  notification_not_accepted: { code: -32600, status: 400, message: 'Notification not accepted' },
  // Causeway or its upstream is at fault: never blamed on the client.
  upstream_unavailable: { code: -32603, status: 502, message: 'Upstream unavailable' },
  upstream_bad_response: { code: -32603, status: 502, message: 'Upstream sent an invalid response' },
  upstream_timeout: { code: -32603, status: 504, message: 'Upstream did not answer in time' },
  // Causeway's own token for the upstream (client credentials, token exchange) could not be had.
  upstream_credentials: { code: -32603, status: 502, message: 'Cannot obtain the upstream credential' },
  // The upstream wants the user's own token (credentials grant authorization_code) and Causeway has
  // none for this principal: calls get a URL-mode sign-in round instead; data.url is the sign-in link.
  upstream_authorization_required: {
    code: -32600,
    status: 403,
    message: 'The upstream needs the user’s own authorization: sign in first',
  },
  // No Mcp-Session-Id at initialize: an answer to the upstream's own request can never reach the call.
  upstream_sessionless: {
    code: -32603,
    status: 502,
    message: 'The upstream keeps no sessions: its request to the client cannot be answered',
  },
  // The upstream's last attempt to open (connect, handshake) failed and it is backing off: answered at
  // once, with Retry-After, rather than each call trying again (a stampede on a recovering server).
  upstream_backing_off: { code: -32603, status: 503, message: 'Upstream unavailable: retry later' },
  draining: { code: -32603, status: 503, message: 'Server is shutting down' },
  overloaded: { code: -32603, status: 503, message: 'Too many requests in flight' },
  auth_unavailable: { code: -32603, status: 503, message: 'Cannot check the access token now' },
  internal_error: { code: -32603, status: 500, message: 'Internal error' },
} as const satisfies Record<string, { code: number; status: number; message: string }>;

export type ErrorReason = keyof typeof ERROR_TABLE;

/**
 * The HTTP status 2026-07-28 pins to a JSON-RPC code, whoever made the error [SHTTP][BASE]:
 * -32601 is 404; -32020, -32021, -32022 are 400. Undefined for the others, which an upstream's
 * answer carries on 200 and Causeway's own take from ERROR_TABLE.
 */
export function pinnedStatus(code: number): number | undefined {
  if (code === -32601) return 404;
  if (code === -32020 || code === -32021 || code === ERA_REFUSED) return 400;
  return undefined;
}

/** -32022, UnsupportedProtocolVersion: the peer refused the protocol revision it was spoken to in. */
const ERA_REFUSED = -32022;

/**
 * Whether a JSON-RPC error (or a CausewayError whose cause is one) refuses the era it was spoken
 * in: the one rule by which an upstream that changed era in place is told from its own answers.
 */
export function refusesEra(error: unknown): boolean {
  const rpc = error instanceof CausewayError ? error.cause : error;
  return typeof rpc === 'object' && rpc !== null && (rpc as { code?: unknown }).code === ERA_REFUSED;
}

export class CausewayError extends Error {
  readonly reason: ErrorReason;
  readonly code: number;
  readonly status: number;
  readonly data: JsonValue | undefined;
  /** Response headers the error needs (WWW-Authenticate). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    reason: ErrorReason,
    message?: string,
    data?: JsonValue,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    const row = ERROR_TABLE[reason];
    super(message ?? row.message, options);
    this.name = 'CausewayError';
    this.reason = reason;
    this.code = row.code;
    this.status = row.status;
    this.data = data;
    this.headers = options?.headers ?? {};
  }
}

export function causewayError(reason: ErrorReason, message?: string, data?: JsonValue, cause?: unknown): CausewayError {
  return new CausewayError(reason, message, data, cause === undefined ? undefined : { cause });
}

/** A 401 or 403 of the resource server, with its WWW-Authenticate challenge [RFC 6750 §3]. */
export function challengeError(
  reason: 'unauthorized' | 'invalid_token' | 'invalid_dpop_proof' | 'insufficient_scope',
  challenge: string,
  message?: string,
  headers: Record<string, string> = {},
): CausewayError {
  return new CausewayError(reason, message, undefined, { headers: { 'www-authenticate': challenge, ...headers } });
}

/**
 * Causeway cannot start as configured, though each setting was valid alone (a port another
 * process holds): the message names the setting to change, and the bin exits 2, as for bad
 * configuration.
 */
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/**
 * A bind of `setting` (listen.port, admin.port) that failed, in words naming the setting; any
 * other failure is returned as it is.
 */
export function bindError(setting: 'listen.port' | 'admin.port', host: string, port: number, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const hostSetting = setting === 'admin.port' ? 'admin.host' : 'listen.host';
  if (code === 'EADDRINUSE') {
    const hint = setting === 'admin.port' ? ' (another replica on this host? set admin.port)' : '';
    return new StartupError(`${setting}: ${where} is already in use${hint}`, { cause: err });
  }
  if (code === 'EACCES') {
    return new StartupError(`${setting}: ${where} needs privileges this process lacks`, { cause: err });
  }
  if (code === 'EADDRNOTAVAIL') {
    return new StartupError(`${hostSetting}: ${host} is not an address of this host`, { cause: err });
  }
  return err;
}

/**
 * The upstream's own refusal of Causeway's `initialize`, reported as the upstream's: a -32022 says
 * the version refused was Causeway's offer upstream (not the client's) and what the upstream
 * supports, kept in data.supported; any other refusal is quoted. The upstream's error is the cause.
 */
export function refusedInitialize(
  upstream: string,
  offered: string,
  refusal: { code: number; message: string; data?: unknown },
): CausewayError {
  const said = refusal.data;
  const listed = typeof said === 'object' && said !== null ? (said as { supported?: unknown }).supported : undefined;
  const supported = Array.isArray(listed) ? listed.filter((v): v is string => typeof v === 'string') : undefined;
  const who = `Upstream ${JSON.stringify(upstream)}`;
  const message = refusesEra(refusal)
    ? `${who} does not support protocol version ${offered}, which Causeway offered it in initialize` +
      (supported?.length ? `; it supports ${supported.join(', ')}` : '') +
      (supported?.includes(MODERN_VERSION) ? ' (set upstream.era auto or modern)' : ' (set upstream.protocolVersion)')
    : `${who} refused initialize: ${refusal.message.slice(0, 200)}`;
  const data = { upstreamCode: refusal.code, offered, ...(supported ? { supported } : {}) };
  return new CausewayError('upstream_unavailable', message, data, { cause: refusal });
}

/**
 * Whether `err` is refusedInitialize's (the upstream refused Causeway's `initialize`), and the
 * versions the upstream said it supports, if it said.
 */
export function initializeRefusal(err: unknown): { supported: readonly string[] } | undefined {
  if (!(err instanceof CausewayError) || err.reason !== 'upstream_unavailable') return undefined;
  const data = err.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data) || data.offered === undefined) return undefined;
  const supported = data.supported;
  return { supported: Array.isArray(supported) ? supported.filter((v): v is string => typeof v === 'string') : [] };
}

/**
 * A call refused while `upstream` backs off after a failed open: says why the last open failed
 * (`why`, the upstream's own words) and when to come back (Retry-After, whole seconds, at least 1).
 */
export function backingOff(upstream: string, why: string, retryInMs: number, cause?: unknown): CausewayError {
  const seconds = Math.max(1, Math.ceil(retryInMs / 1000));
  const message =
    `Upstream ${JSON.stringify(upstream)} is backing off after a failed start (${why}); ` + `retry after ${seconds} s`;
  const options = { headers: { 'retry-after': String(seconds) }, ...(cause === undefined ? {} : { cause }) };
  return new CausewayError('upstream_backing_off', message, { retryAfterSeconds: seconds }, options);
}

/** Anything thrown that is not a CausewayError becomes internal_error, its text never shown. */
export function toCausewayError(err: unknown): CausewayError {
  if (err instanceof CausewayError) return err;
  return new CausewayError('internal_error', undefined, undefined, { cause: err });
}
