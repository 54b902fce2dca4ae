// The root pino logger. Stages never import it: they receive a child (per request or per
// component). Credentials and session ids are redacted by path.

import { pino, type Logger, type DestinationStream } from 'pino';

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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'causeway' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
