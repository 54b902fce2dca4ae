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

/** Runs `fn` as part of request `reqId`, for the lines written at debug. */
export function inRequestLog<T>(log: Logger, reqId: string, fn: () => T): T {
  return log.isLevelEnabled('debug') ? debugRequest.run(reqId, fn) : fn();
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'causeway' },
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
