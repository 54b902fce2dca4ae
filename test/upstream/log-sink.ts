// A pino logger whose JSON lines are kept in memory, so tests can assert what was (not) logged.

import { createLogger, type Logger } from '../../src/log.js';

export interface LogSink {
  log: Logger;
  text(): string;
  lines(): Record<string, unknown>[];
}

export function logSink(): LogSink {
  const raw: string[] = [];
  const root = createLogger('debug', { write: (s: string) => void raw.push(s) });
  return {
    log: root.child({ component: 'upstream-test' }),
    text: () => raw.join(''),
    lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
