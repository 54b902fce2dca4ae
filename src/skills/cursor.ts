// The cursors of the lists the skills front pages: where a walk is in the folder's part (an
// offset) or in the upstream's (its own cursor, carried inside). Anything else is -32602 [PAGE].

import { invalidCursor, readCursorFields } from '../envelope/index.js';

export type Cursor = { at: 'folder'; offset: number } | { at: 'upstream'; cursor: string | undefined };

export function writeCursor(method: string, c: Cursor): string {
  const v = c.at === 'folder' ? { m: method, o: c.offset } : { m: method, u: c.cursor ?? null };
  return Buffer.from(JSON.stringify(v)).toString('base64url');
}

/** The cursor of a request; undefined when it has none (the first page). */
export function readCursor(value: unknown, method: string): Cursor | undefined {
  const v = readCursorFields(value, method, 4096);
  if (v === undefined) return undefined;
  const { o, u } = v;
  if (typeof o === 'number' && Number.isInteger(o) && o >= 0) return { at: 'folder', offset: o };
  if (u === null || typeof u === 'string') return { at: 'upstream', cursor: u ?? undefined };
  throw invalidCursor();
}

/** One page of `items` from `offset`, and the cursor of the next when there is one. */
export function pageOf<T>(
  items: readonly T[],
  offset: number,
  size: number,
  method: string,
): { page: T[]; next: string | undefined } {
  const end = Math.min(offset, items.length) + size;
  return {
    page: items.slice(offset, end),
    next: end < items.length ? writeCursor(method, { at: 'folder', offset: end }) : undefined,
  };
}
