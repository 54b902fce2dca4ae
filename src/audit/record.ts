// The audit record (log.audit): one info line for every tools/call, prompts/get and
// resources/read, of either era, sampled never. It says who called (the verified token's iss,
// sub and client_id, else the principal label the operator's header carries), where (mount,
// upstream, the two eras), what (the tool, prompt or resource) and how it ended. Built from what
// the front door knows when the response is done; never the token, a session id or arguments.

import { ANONYMOUS, type Access, type PrincipalPolicy } from '../auth/index.js';
import type { HeaderBag } from '../envelope/index.js';
import type { CausewayError } from '../errors.js';
import type { RequestId } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import type { AnswerTap } from './tap.js';

/** What a client does with a tool, a prompt or a resource: the methods every request of which is audited. */
export const AUDITED: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** Longest name, label or claim written: a client chooses them, and a line stays a line. */
const MAX_CHARS = 256;

/** One audited request: its method, what it names (Mcp-Name's value), and the id its answer carries. */
export interface AuditedCall {
  method: string;
  name: string | undefined;
  id: RequestId | null;
}

/** Who asked, as the audit record says it: the token's claims, a principal label, or its hash. */
export interface Who {
  iss?: string;
  sub?: string;
  client_id?: string;
  /** principal.mode header: the header's value, a label the operator's own front end sets. */
  principal?: string;
  /** principal.mode bearer: the HMAC the pool keys on, never the token it was made from. */
  principalHash?: string;
}

/** What the front door knows of an audited request once its response is done. */
export interface AuditEnd {
  who: Who;
  mount: string;
  upstream: string | undefined;
  /** The client's era, and the upstream's when known (a federated mount's member's is not). */
  era: 'modern' | 'legacy';
  upstreamEra: 'modern' | 'legacy' | undefined;
  /** The front door's own refusal (auth, scopes, rates, the request's shape), when it refused. */
  refused: CausewayError | undefined;
  /** The JSON-RPC error code a stage answered with (the access log's `code`). */
  code: number | undefined;
  /** What the answer's bytes said, for an answer no stage parsed. */
  tap: AnswerTap | undefined;
  status: number;
  finished: boolean;
  ms: number;
  traceId: string | undefined;
}

type Outcome = { outcome: 'ok' | 'error' | 'refused' | 'cancelled'; code?: number; reason?: string };

/** One line per audited call, on the request's logger (its reqId bound). */
export function writeAudit(log: Logger, calls: readonly AuditedCall[], end: AuditEnd): void {
  for (const call of calls) {
    log.info(
      {
        ...end.who,
        mount: end.mount,
        upstream: end.upstream,
        era: end.era,
        upstreamEra: end.upstreamEra,
        method: call.method,
        name: call.name?.slice(0, MAX_CHARS),
        ...outcomeOf(call, end),
        status: end.status,
        ms: end.ms,
        traceId: end.traceId,
      },
      'audit',
    );
  }
}

function outcomeOf(call: AuditedCall, end: AuditEnd): Outcome {
  if (end.refused) return { outcome: 'refused', code: end.refused.code, reason: end.refused.reason };
  const code = end.tap?.codeFor(call.id) ?? end.code;
  if (code !== undefined) return { outcome: 'error', code };
  if (!end.finished) return { outcome: 'cancelled' };
  return { outcome: end.status >= 400 ? 'error' : 'ok' };
}

/** Who asked: the verified token's claims; else what principal.mode tells apart, never a raw token. */
export function whoOf(access: Access | undefined, policy: PrincipalPolicy, headers: HeaderBag, principal: string): Who {
  if (access) {
    const { issuer, subject, clientId } = access.identity;
    return { iss: issuer, sub: subject.slice(0, MAX_CHARS), client_id: clientId?.slice(0, MAX_CHARS) };
  }
  if (policy.mode === 'header') {
    const label = headers[policy.header.toLowerCase()]?.trim();
    return label ? { principal: label.slice(0, MAX_CHARS) } : {};
  }
  return policy.mode === 'bearer' && principal !== '' && principal !== ANONYMOUS ? { principalHash: principal } : {};
}
