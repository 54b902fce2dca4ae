// Whether an upstream's refusal of a request on a session says the session is gone [L-TR]. The
// spec asks for 404, and the legacy SDK's transport sends it ("Session not found"); but the
// session-map pattern of that SDK's own README example, which many servers copied (server-everything
// among them), answers an id it does not know with 400 and `-32000 "Bad Request: No valid session ID
// provided"`, id null, and its GET and DELETE with a plain-text 400. Neither ran the request, so
// the pool opens a new session and sends it there once, whatever the method.
//
// A 400 or 404 on a session is read as lost when its body rejects the session (names it), or, for
// a request, when it holds no JSON-RPC answer to that request (no JSON-RPC error, or one with
// another id, null included). A JSON-RPC error that answers the request and says nothing of the
// session is the upstream's own answer (a 404 with -32601, say), and a -32022 is an era refusal
// (the server now speaks 2026-07-28), both handled as before. A 404 to anything else (a
// notification, a GET, a DELETE) is lost, as the spec says; a 400 to those only when it names the
// session, since such a 400 has no request id to tell a lost session from a refused message.

import type { RequestId } from '../../jsonrpc.js';
import { refusesEra } from '../../errors.js';

/** The most of a refusal's body read to decide: an error body, never a stream. */
export const REFUSAL_BODY_LIMIT = 64 * 1024;

const NAMES_SESSION = /session/i;

/** The JSON-RPC error a refusal's body holds, if it is one: its id (null when none) and message. */
function errorIn(text: string): { id: unknown; code: unknown; message: string } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const m = Array.isArray(parsed) && parsed.length === 1 ? (parsed[0] as unknown) : parsed;
  if (typeof m !== 'object' || m === null) return undefined;
  const { error, id } = m as { error?: unknown; id?: unknown };
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return { id: id ?? null, code, message: typeof message === 'string' ? message : '' };
}

/**
 * Whether `status` with body `text` (undefined when it was too large to read) to a message on a
 * session means the upstream no longer knows that session. `id`: the request's id; undefined for a
 * notification, a response, a GET stream or a DELETE.
 */
export function losesSession(status: number, text: string | undefined, id: RequestId | undefined): boolean {
  if (status !== 400 && status !== 404) return false;
  const rpc = text === undefined ? undefined : errorIn(text);
  if (rpc === undefined) return status === 404 || id !== undefined || (text !== undefined && NAMES_SESSION.test(text));
  if (refusesEra(rpc)) return false;
  if (NAMES_SESSION.test(rpc.message)) return true;
  if (id !== undefined) return rpc.id !== id;
  return status === 404;
}
