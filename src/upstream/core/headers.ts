// Request headers for a legacy Streamable HTTP upstream. Protocol headers (Accept, Content-Type,
// Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID) always win, then configured ones, then extra ones;
// names are lower-cased so nothing is sent twice. 2024-11-05 and 2025-03-26 get no version header.

import { createHash } from 'node:crypto';
import { encodeHeaderValue } from '../../envelope/index.js';

export interface SessionRef {
  sessionId: string | undefined;
  protocolVersion: string;
  /** The URL of the upstream replica the session lives on; absent: the upstream's first URL. */
  target?: string;
  /** The principal hash the session was opened for: whose upstream credential it is sent with. */
  principal?: string;
}

export type UpstreamRequestKind = 'post' | 'get' | 'delete' | 'initialize';

/** [L-TR] 2025-06-18 introduced MCP-Protocol-Version; older peers predate it. */
const VERSIONS_WITHOUT_HEADER: ReadonlySet<string> = new Set(['2024-11-05', '2025-03-26']);

export function sendsVersionHeader(protocolVersion: string): boolean {
  return !VERSIONS_WITHOUT_HEADER.has(protocolVersion);
}

export function upstreamHeaders(
  kind: UpstreamRequestKind,
  session: SessionRef | undefined,
  configured: Record<string, string> | undefined,
  extra?: Record<string, string>,
  lastEventId?: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  // The operator's configured headers win over per-request ones (forwarded client headers); the
  // protocol's own are never taken from either.
  if (extra !== undefined) copyHeaders(out, extra);
  if (configured !== undefined) copyHeaders(out, configured);

  if (kind === 'post' || kind === 'initialize') {
    out['accept'] = 'application/json, text/event-stream';
    out['content-type'] = 'application/json';
  } else if (kind === 'get') {
    out['accept'] = 'text/event-stream';
  }
  if (kind === 'initialize' || session === undefined) return out;

  if (session.sessionId !== undefined) out['mcp-session-id'] = session.sessionId;
  if (sendsVersionHeader(session.protocolVersion)) out['mcp-protocol-version'] = session.protocolVersion;
  if (lastEventId !== undefined && kind === 'get') out['last-event-id'] = lastEventId;
  return out;
}

/** Headers only Causeway sets, per session and stream. */
const PROTOCOL_HEADERS: ReadonlySet<string> = new Set(['mcp-session-id', 'mcp-protocol-version', 'last-event-id']);

/** Lower-cased, the protocol's own left out (not deleted after: an object that loses keys gets slow). */
function copyHeaders(out: Record<string, string>, from: Record<string, string>): void {
  for (const k in from) {
    const name = k.toLowerCase();
    if (!PROTOCOL_HEADERS.has(name)) out[name] = from[k]!;
  }
}

/**
 * Mcp-Method / Mcp-Name for a request Causeway sends on a modern client's behalf (so a
 * header-routing balancer between Causeway and the servers can use them), after the client
 * headers that upstream may get.
 */
export function callHeaders(
  method: string,
  name: string | undefined,
  forwarded: Record<string, string> = {},
): Record<string, string> {
  const h: Record<string, string> = {};
  for (const k in forwarded) h[k] = forwarded[k]!;
  h['mcp-method'] = method;
  if (name !== undefined) h['mcp-name'] = encodeHeaderValue(name);
  return h;
}

/** [L-TR] A session id is visible ASCII, 0x21..0x7E. */
export function isValidSessionId(v: string): boolean {
  return /^[\x21-\x7e]+$/.test(v);
}

/** Names an upstream session where its id must not go (a sealed state, a message between replicas). */
export function sessionDigest(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('base64url').slice(0, 22);
}
