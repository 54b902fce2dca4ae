// The legacy initialize handshake: initialize on one URL of the upstream (the next admitted one
// when a URL cannot be reached or cannot take a session now), check what it answered, then
// notifications/initialized. A session the upstream opened that the handshake could not finish
// is ended, so none is left behind.

import { CausewayError, refusedInitialize, refusesEra } from '../../errors.js';
import { isObject, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import type { CallScope } from './call-scope.js';
import {
  TargetUnreachableError,
  type HandshakeResult,
  type InitializeParams,
  type SessionRef,
  type TargetSet,
} from '../core/index.js';
import type { Exchange } from './inbound.js';
import { badResponse } from './inbound.js';

export type { HandshakeResult, InitializeParams } from '../core/index.js';

/** What the handshake needs of the upstream client. */
export interface HandshakeHost {
  /** The upstream's name, in the words of its refusals. */
  upstream?: string;
  targets: TargetSet;
  log: Logger;
  /** POSTs the initialize and reads its answer; sets ctx.session.sessionId from Mcp-Session-Id. */
  exchangeInitialize(ctx: Exchange, body: string): Promise<JsonRpcResponse>;
  postOneWay(scope: CallScope, session: SessionRef, message: JsonRpcNotification): Promise<void>;
  terminate(session: SessionRef): Promise<void>;
}

const INITIALIZE_ID = 0;

/** Initializes on the first URL that takes it; errors are settled against `scope` by the caller. */
export async function initializeOn(
  host: HandshakeHost,
  params: InitializeParams,
  scope: CallScope,
  principal?: string,
): Promise<HandshakeResult> {
  const tried = new Set<string>();
  for (;;) {
    const target = host.targets.pick(tried);
    tried.add(target);
    try {
      return await handshake(host, params, { target, principal }, scope);
    } catch (err) {
      if (!(err instanceof TargetUnreachableError)) throw scope.settle(err);
      // Never reached: another replica of the upstream may take the session.
      if (!scope.aborted && tried.size < host.targets.size) continue;
      throw scope.settle(err.cause);
    }
  }
}

async function handshake(
  host: HandshakeHost,
  params: InitializeParams,
  at: Pick<SessionRef, 'target' | 'principal'>,
  scope: CallScope,
): Promise<HandshakeResult> {
  const ctx: Exchange = {
    session: { sessionId: undefined, protocolVersion: params.protocolVersion, ...at },
    handlers: {},
    id: INITIALIZE_ID,
    scope,
    lenient: false,
  };
  let opened = false;
  try {
    const msg: JsonRpcRequest = { jsonrpc: '2.0', id: INITIALIZE_ID, method: 'initialize', params: { ...params } };
    let response: JsonRpcResponse;
    try {
      response = await host.exchangeInitialize(ctx, JSON.stringify(msg));
    } catch (err) {
      // An HTTP refusal carrying a -32022: the version refused was Causeway's offer, not the client's.
      if (err instanceof CausewayError && isRpcError(err.cause) && refusesEra(err.cause)) {
        throw refusedInitialize(host.upstream ?? 'upstream', params.protocolVersion, err.cause);
      }
      throw err;
    }
    opened = true;
    if ('error' in response) {
      throw refusedInitialize(host.upstream ?? 'upstream', params.protocolVersion, response.error);
    }
    const version = response.result.protocolVersion;
    if (typeof version !== 'string' || version === '') throw badResponse('initialize result has no protocolVersion');
    const session: SessionRef = { sessionId: ctx.session.sessionId, protocolVersion: version, ...at };
    ctx.session = session;
    await host.postOneWay(scope, session, { jsonrpc: '2.0', method: 'notifications/initialized' });
    host.log.debug({ protocolVersion: version, sessionful: session.sessionId !== undefined }, 'upstream initialized');
    return { ...session, initializeResult: response.result };
  } catch (err) {
    if (opened && ctx.session.sessionId !== undefined) void host.terminate(ctx.session);
    throw err;
  }
}

/** A JSON-RPC error object, as an upstream's refusal carries it. */
function isRpcError(v: unknown): v is { code: number; message: string; data?: unknown } {
  return isObject(v) && typeof v.code === 'number' && typeof v.message === 'string';
}
