// The root pino logger. Stages never import it: they receive a child (per request or per
// component). Credentials and session ids are redacted by path.

import { AsyncLocalStorage } from 'node:async_hooks';
import { pino, type Bindings, type Logger, type DestinationStream } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["mcp-session-id"]',
  'req.headers["proxy-authorization"]',
  'headers.authorization',
  'headers["mcp-session-id"]',
  'sessionId',
  'requestState',
  'token',
];

/**
 * The request a line is written for, at debug: lines of components that outlive a request (the
 * upstream clients, the pool) carry its reqId too. Kept only with debug on, since an async
 * context costs every request something.
 */
const debugRequest = new AsyncLocalStorage<string>();

/** Runs `fn(a, b)` as part of request `reqId`, for the lines written at debug (no closure needed to call it). */
export function inRequestLog<A, B, T>(log: Logger, reqId: string, fn: (a: A, b: B) => T, a: A, b: B): T {
  return log.isLevelEnabled('debug') ? debugRequest.run(reqId, fn, a, b) : fn(a, b);
}

/**
 * Errors as pino writes them, without their stack below debug: an upstream that cannot be reached,
 * a refusal or a timeout is the operator's news, and its stack trace only buries it. With
 * log.level debug (or trace) the stack is written too.
 */
export function errorSerializer(level: string): (err: Error) => unknown {
  const withStack = pino.stdSerializers.err;
  if ((pino.levels.values[level] ?? Infinity) <= pino.levels.values.debug!) return withStack;
  return (err) => {
    const out: unknown = withStack(err);
    if (typeof out === 'object' && out !== null && 'stack' in out) delete (out as { stack?: string }).stack;
    return out;
  };
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'causeway' },
      serializers: { err: errorSerializer(level) },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // A logger that has the reqId bound already says it; a key twice would break strict JSON parsers.
      mixin: (_merge, _level, logger) => {
        const reqId = debugRequest.getStore();
        return reqId === undefined || 'reqId' in logger.bindings() ? {} : { reqId };
      },
    },
    destination,
  );
}

const noop = (): void => undefined;

/**
 * A request's child logger. Most requests log nothing, and a pino child serialises its bindings
 * when made: below debug, the child is made the first time a line at an enabled level is written
 * (its children likewise). With debug on it is made at once.
 */
export function requestLogger(parent: Logger, bindings: Bindings): Logger {
  return parent.isLevelEnabled('debug') ? parent.child(bindings) : deferred(parent, () => parent.child(bindings));
}

function deferred(levels: Logger, make: () => Logger): Logger {
  let real: Logger | undefined;
  const get = () => (real ??= make());
  return new Proxy(levels, {
    get(target, key) {
      if (key === 'child') return (b: Bindings) => deferred(target, () => get().child(b));
      if (typeof key === 'string' && key in target.levels.values && !target.isLevelEnabled(key)) return noop;
      const v: unknown = Reflect.get(get(), key);
      return typeof v === 'function' ? v.bind(real) : v;
    },
  });
}
