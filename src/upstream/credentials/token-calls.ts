// Causeway's HTTP calls to an upstream's authorization server, for credentials.ts and sign-in.ts:
// token requests [RFC 6749 §4, RFC 8693], a client registration [RFC 7591] and the server's
// metadata [RFC 8414], made and checked by oauth4webapi. The one place credentials/ speaks HTTP:
// every call goes through undici's fetch (its global dispatcher, which Node's own fetch shares) and
// is bounded by CALL_TIMEOUT_MS. Unreachable servers and refusals are upstream_credentials errors.
// No token reaches a log.

import * as oauth from 'oauth4webapi';
import { fetch } from 'undici';
import { safeForSecrets } from '../../config/index.js';
import { CausewayError } from '../../errors.js';
import type { Logger } from '../../log.js';

const CALL_TIMEOUT_MS = 10_000;

export type AuthorizationServer = oauth.AuthorizationServer;

export function credentialError(message: string, cause?: unknown): CausewayError {
  return new CausewayError('upstream_credentials', message, undefined, cause === undefined ? undefined : { cause });
}

/** Who Causeway is at the upstream's authorization server; a public client has no secret (''). */
export interface OAuthClient {
  id: string;
  secret: string;
}

/** A token endpoint's answer [RFC 6749 §5.1]. */
export interface TokenAnswer {
  token: string;
  expiresInS: number | undefined;
  refreshToken: string | undefined;
}

/**
 * What every call is given: undici's fetch, the time bound, and plain http only to this machine, as
 * config allows for tokenUrl and issuer (an endpoint the server's metadata names too: the client
 * secret and the users' codes go there).
 */
function http(url: string) {
  return {
    [oauth.customFetch]: fetch as unknown as typeof globalThis.fetch,
    [oauth.allowInsecureRequests]: safeForSecrets(new URL(url)),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  };
}

/** A server known by its token endpoint alone (client_credentials, token_exchange). */
export function tokenEndpoint(url: string): AuthorizationServer {
  return { issuer: new URL(url).origin, token_endpoint: url };
}

/**
 * Sends a call and reads its answer; `what` the server was asked for names the errors. A failure
 * to send is "could not be reached", any answer oauth4webapi does not accept a refusal: with the
 * server's error code, a registered one [RFC 6749 §5.2], short and safe to log (its description is not logged).
 */
async function call<T>(
  what: string,
  log: Logger,
  send: () => Promise<Response>,
  read: (res: Response) => Promise<T>,
): Promise<T> {
  let res: Response;
  try {
    res = await send();
  } catch (err) {
    log.warn({ what, err: (err as Error).message }, 'call to the upstream’s authorization server failed');
    throw credentialError('The upstream’s authorization server could not be reached', err);
  }
  try {
    return await read(res);
  } catch (err) {
    if (err instanceof CausewayError) throw err;
    const error = (await errorCode(err))?.slice(0, 64);
    log.warn({ what, status: res.status, error }, 'the upstream’s authorization server refused a call');
    // Without the cause: oauth4webapi's errors carry the answer's body, and a failed request's cause is logged.
    throw credentialError(`The upstream’s authorization server refused ${what}${error ? ` (${error})` : ''}`);
  }
}

/** The error code of a refusal, in its body or (a 401 with a challenge, left unread) its WWW-Authenticate. */
async function errorCode(err: unknown): Promise<string | undefined> {
  if (err instanceof oauth.ResponseBodyError) return err.error;
  if (!(err instanceof oauth.WWWAuthenticateChallengeError)) return undefined;
  const body = (await err.response.json().catch(() => undefined)) as { error?: unknown } | undefined;
  const error = typeof body?.error === 'string' ? body.error : err.cause[0]?.parameters.error;
  return typeof error === 'string' ? error : undefined;
}

/** A token request with client_secret_basic (a public client names itself in the form [RFC 6749 §3.2.1]). */
export async function tokenRequest(
  as: AuthorizationServer,
  client: OAuthClient,
  grant: string,
  params: URLSearchParams,
  log: Logger,
): Promise<TokenAnswer> {
  const c = { client_id: client.id };
  const auth = client.secret === '' ? oauth.None() : oauth.ClientSecretBasic(client.secret);
  const notBearer = () =>
    credentialError('The upstream’s authorization server issued a token that is not a Bearer token');
  const answer = await call(
    'the token request',
    log,
    () => oauth.genericTokenEndpointRequest(as, c, auth, grant, params, http(as.token_endpoint!)),
    // oauth4webapi takes bearer and dpop, and refuses any other token_type as unsupported.
    (res) =>
      oauth.processGenericTokenEndpointResponse(as, c, res).catch((err: unknown) => {
        throw err instanceof oauth.UnsupportedOperationError ? notBearer() : err;
      }),
  );
  if (answer.token_type !== 'bearer') throw notBearer();
  const { access_token: token, expires_in: expiresInS, refresh_token: refreshToken } = answer;
  return { token, expiresInS: expiresInS || undefined, refreshToken: refreshToken || undefined };
}

/** Registers a client [RFC 7591] at the server's registration endpoint. */
export async function register(as: AuthorizationServer, metadata: Partial<oauth.Client>, log: Logger) {
  return call(
    'Causeway’s registration',
    log,
    () => oauth.dynamicClientRegistrationRequest(as, metadata, http(as.registration_endpoint!)),
    (res) => oauth.processDynamicClientRegistrationResponse(res),
  );
}

/** RFC 8414 metadata (path-inserted), else OpenID discovery; its issuer must be the one configured, exactly. */
export async function discover(issuer: string): Promise<AuthorizationServer> {
  const id = new URL(issuer);
  let last: unknown;
  for (const algorithm of ['oauth2', 'oidc'] as const) {
    try {
      const res = await oauth.discoveryRequest(id, { algorithm, ...http(issuer) });
      const md = await oauth.processDiscoveryResponse(id, res);
      // oauth4webapi compares the two as URLs; RFC 8414 §3.3 wants them identical.
      if (md.issuer !== issuer) throw new Error(`${issuer}: the metadata names issuer ${md.issuer}`);
      if (!md.authorization_endpoint || !md.token_endpoint) {
        throw new Error(`${issuer}: no authorization or token endpoint`);
      }
      if (!md.code_challenge_methods_supported?.includes('S256')) throw new Error(`${issuer}: PKCE S256 not supported`);
      return md;
    } catch (err) {
      last = err;
    }
  }
  throw last;
}
