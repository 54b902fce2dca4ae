// What replicas send each other about a stdio or HTTP+SSE session one of them owns
// (replica-relay.ts): an operation on the session, its acknowledgment, the upstream's messages
// on the way, its outcome, and the owner's heartbeats; errors as plain words, made typed again
// on the sender's side.

import { CausewayError, causewayError, type ErrorReason } from '../../errors.js';
import type { JsonRpcNotification, JsonValue, JsonRpcRequest, JsonRpcResponse, RequestId } from '../../jsonrpc.js';
import {
  ResumeRefusedError,
  SessionExpiredError,
  TargetUnreachableError,
  type SessionRef,
  type StreamHandlers,
} from '../core/index.js';

export type Handler = keyof StreamHandlers;
/** Operations remembered for repeats, by id: far more than a replica serves within a failover. */
export const REMEMBERED = 1_000;
export const HANDLERS: readonly Handler[] = ['onNotification', 'onServerRequest', 'beforeEvent', 'afterEvent'];

export type Operation =
  | { op: 'request'; msg: JsonRpcRequest; handlers: Handler[]; headers?: Record<string, string>; timeoutMs?: number }
  | { op: 'resume'; callId: RequestId; lastEventId: string; handlers: Handler[]; timeoutMs?: number }
  | { op: 'notify'; msg: JsonRpcNotification }
  | { op: 'respond'; msg: JsonRpcResponse }
  | { op: 'stream'; handlers: Handler[]; lastEventId?: string }
  | { op: 'terminate' };

export type WireError =
  | { kind: 'expired' }
  | { kind: 'unreachable' }
  | { kind: 'resume-refused'; httpStatus: number }
  | { kind: 'causeway'; reason: ErrorReason; message: string; data?: unknown };

export type Wire =
  | ({ t: 'op'; id: string; from: string; ref: SessionRef } & Operation)
  | { t: 'ack'; id: string }
  | { t: 'event'; id: string; h: Handler; arg: unknown }
  /** An operation's outcome; for a stream, that it is open (value 'open') or unsupported. */
  | { t: 'done'; id: string; value?: unknown; error?: WireError }
  /** A stream that was open has ended. */
  | { t: 'end'; id: string; error?: WireError }
  | { t: 'cancel'; id: string }
  | { t: 'alive'; ids: string[] };

/** The handlers a caller gave, by name: the owner relays what the upstream sends to those only. */
export function handlerNames(handlers: StreamHandlers): Handler[] {
  return HANDLERS.filter((h) => handlers[h] !== undefined);
}

export function encode(err: unknown): WireError {
  if (err instanceof TargetUnreachableError) return { kind: 'unreachable' };
  if (err instanceof SessionExpiredError) return { kind: 'expired' };
  if (err instanceof ResumeRefusedError) return { kind: 'resume-refused', httpStatus: err.httpStatus };
  const e = err instanceof CausewayError ? err : causewayError('internal_error');
  return { kind: 'causeway', reason: e.reason, message: e.message, data: e.data };
}

/** A wire error as the typed error the caller's own client would have thrown. */
export function decode(upstream: string, e: WireError): Error {
  switch (e.kind) {
    case 'expired':
      return new SessionExpiredError(upstream);
    case 'unreachable':
      return new TargetUnreachableError(upstream, new Error('the replica holding the session is stopping'));
    case 'resume-refused':
      return new ResumeRefusedError(upstream, e.httpStatus);
    case 'causeway':
      return causewayError(e.reason, e.message, e.data as JsonValue | undefined);
  }
}
