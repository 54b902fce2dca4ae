// The cursors of the lists Causeway pages itself (a federation's merged lists, a skills front's):
// base64url JSON that names the list's method beside what the next page starts from. A cursor
// that is anything else, or another list's, is -32602 [PAGE].

import { causewayError, type CausewayError } from '../errors.js';
import { isObject, type JsonObject } from '../jsonrpc.js';

/** The error a cursor Causeway did not issue for this list is answered with [PAGE]. */
export function invalidCursor(): CausewayError {
  return causewayError('invalid_params', 'Invalid cursor');
}

/**
 * The fields of a request's cursor, one Causeway issued for `method`'s list; undefined when the request has none (the
 * first page); invalidCursor() when it is not such a cursor, or longer than `maxLength`.
 */
export function readCursorFields(cursor: unknown, method: string, maxLength: number): JsonObject | undefined {
  if (cursor === undefined) return undefined;
  if (typeof cursor !== 'string' || cursor.length > maxLength) throw invalidCursor();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (!isObject(parsed) || parsed.m !== method) throw invalidCursor();
  return parsed;
}
