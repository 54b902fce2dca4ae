// Every answer's head carries its request's x-request-id: the front door's servers make these
// responses, and each adds the id to the one header object its writer passes, so Node sends that
// object as it is. Set progressively (setHeader) on every request, the id made Node keep a header
// table per response and merge each writer's headers into it one setHeader at a time. A head
// written with no headers (an implicit one, a bare status) or with an array of them gets the id
// through setHeader, as before. A request that brings no id is given a random UUID made here.

import { randomFillSync } from 'node:crypto';
import http, { type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';
import http2 from 'node:http2';

const NAME = 'x-request-id';

type Head = OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined;

interface Tagged {
  requestId: string | undefined;
  setHeader(name: string, value: string): unknown;
}

/** `head` with the request id in it: a copy, since a writer's headers may be a shared constant. */
function withId(res: Tagged, head: Head): Head {
  const id = res.requestId;
  if (id === undefined) return head;
  if (head === undefined || Array.isArray(head)) {
    res.setHeader(NAME, id);
    return head;
  }
  // A head that holds it already was made for this response alone (requestIdOf): sent as it is.
  if (head[NAME] === id) return head;
  const all: OutgoingHttpHeaders = {};
  for (const name in head) all[name] = head[name];
  all[NAME] = id;
  return all;
}

/** HTTP/1.1 (cleartext, and over TLS through the secure server's allowHTTP1). */
export class H1Response extends http.ServerResponse {
  requestId: string | undefined = undefined;

  override writeHead(status: number, reason?: string | Head, head?: Head): this {
    if (typeof reason === 'string') return super.writeHead(status, reason, withId(this, head));
    return super.writeHead(status, withId(this, reason));
  }
}

/** HTTP/2 (h2c by prior knowledge, and h2 over TLS). */
export class H2Response extends http2.Http2ServerResponse {
  requestId: string | undefined = undefined;

  override writeHead(status: number, reason?: string | Head, head?: Head): this {
    if (typeof reason === 'string') return super.writeHead(status, reason, withId(this, head) as OutgoingHttpHeaders);
    return super.writeHead(status, withId(this, reason) as OutgoingHttpHeaders);
  }
}

/** Gives `res` its request id: in the head it will write, or at once for a response of another class. */
export function tagResponse(
  res: object & { setHeader(name: string, value: string): unknown },
  requestId: string,
): void {
  if (res instanceof H1Response || res instanceof H2Response) res.requestId = requestId;
  else res.setHeader(NAME, requestId);
}

/** The id `res` puts in its head, for a writer that makes a head for it alone with the id in it already (no copy). */
export function requestIdOf(res: object): string | undefined {
  return res instanceof H1Response || res instanceof H2Response ? res.requestId : undefined;
}

/** Random bytes for the ids made here, UUID_BATCH ids' worth at a time (as Node's randomUUID keeps them). */
const UUID_BATCH = 128;
const random = Buffer.alloc(16 * UUID_BATCH);
let used = UUID_BATCH;
/** Where an id is written before it is read out as one string. */
const text = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');

/**
 * A request id for a request that brings none: a random (version 4) UUID, as crypto.randomUUID
 * makes, written out into one string (randomUUID joins some twenty strings to make it).
 */
export function newRequestId(): string {
  if (used === UUID_BATCH) {
    randomFillSync(random);
    used = 0;
  }
  const at = 16 * used++;
  random[at + 6] = (random[at + 6]! & 0x0f) | 0x40;
  random[at + 8] = (random[at + 8]! & 0x3f) | 0x80;
  let o = 0;
  for (let i = 0; i < 16; i++) {
    // xxxxxxxx-xxxx-4xxx-Nxxx-xxxxxxxxxxxx
    if (i === 4 || i === 6 || i === 8 || i === 10) text[o++] = 0x2d;
    const b = random[at + i]!;
    text[o++] = HEX[b >> 4]!;
    text[o++] = HEX[b & 0x0f]!;
  }
  return text.toString('latin1', 0, 36);
}
