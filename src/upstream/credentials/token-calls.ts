// Causeway's HTTP calls to an upstream's authorization server, for credentials.ts and sign-in.ts:
// token requests [RFC 6749 §4], a client registration [RFC 7591] and the server's metadata
// [RFC 8414]. The one place credentials/ speaks HTTP; each call is bounded by CALL_TIMEOUT_MS.
// Refused and failed token requests are upstream_credentials errors. No token reaches a log.

import { request } from 'undici';
import { CausewayError } from '../../errors.js';
import type { Logger } from '../../log.js';

const CALL_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 64 * 1024;

export function credentialError(message: string, cause?: unknown): CausewayError {
  return new CausewayError('upstream_credentials', message, undefined, cause === undefined ? undefined : { cause });
}

/** Who Causeway is at a token endpoint; a public client has no secret (''). */
export interface TokenClient {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
}

/** A token endpoint's answer [RFC 6749 §5.1]. */
export interface TokenAnswer {
  token: string;
  expiresInS: number | undefined;
  refreshToken: string | undefined;
}

/** RFC 6749 §2.3.1: client id and secret are form-encoded before Basic. */
function basic(id: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

/** POSTs a token request with client_secret_basic; refusals and failures are upstream_credentials errors. */
export async function tokenRequest(client: TokenClient, form: URLSearchParams, log: Logger): Promise<TokenAnswer> {
  const grant = form.get('grant_type');
  if (client.clientSecret === '') form.set('client_id', client.clientId);
  let status: number;
  let body: unknown;
  try {
    const res = await request(client.tokenUrl, {
      method: 'POST',
      // A public client (no secret: a metadata document's) names itself in the form [RFC 6749 §3.2.1].
      headers: {
        ...(client.clientSecret === '' ? {} : { authorization: basic(client.clientId, client.clientSecret) }),
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form.toString(),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    status = res.statusCode;
    const text = await res.body.text();
    body = text.length <= MAX_ANSWER_BYTES ? JSON.parse(text) : undefined;
  } catch (err) {
    log.warn({ grant, err: (err as Error).message }, 'upstream token request failed');
    throw credentialError('The upstream’s authorization server could not be reached', err);
  }
  const o = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (status !== 200 || typeof o.access_token !== 'string' || o.access_token === '') {
    // error is a registered code [RFC 6749 §5.2]: short and safe to log; the description is not logged.
    const error = typeof o.error === 'string' ? o.error.slice(0, 64) : undefined;
    log.warn({ grant, status, error }, 'upstream token refused');
    throw credentialError(`The upstream’s authorization server refused the token request${error ? ` (${error})` : ''}`);
  }
  if (typeof o.token_type !== 'string' || o.token_type.toLowerCase() !== 'bearer') {
    throw credentialError('The upstream’s authorization server issued a token that is not a Bearer token');
  }
  const expiresIn = typeof o.expires_in === 'number' && o.expires_in > 0 ? o.expires_in : undefined;
  const refresh = typeof o.refresh_token === 'string' && o.refresh_token !== '' ? o.refresh_token : undefined;
  return { token: o.access_token, expiresInS: expiresIn, refreshToken: refresh };
}

/** POSTs a JSON document (a client registration) and reads the JSON answer; throws when the server cannot be reached or answers garbage. */
export async function postJson(url: string, document: unknown): Promise<{ status: number; body: unknown }> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(document),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  return { status: res.statusCode, body: await res.body.json() };
}

/** GETs a JSON document (a server's metadata); an answer other than 200 throws. */
export async function getJson(url: string): Promise<unknown> {
  const res = await request(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`${url}: HTTP ${res.statusCode}`);
  }
  return res.body.json();
}
