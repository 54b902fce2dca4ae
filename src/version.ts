// The version of the package this file was installed from (dist/src/version.js -> package.json):
// one source for --version, clientInfo and serverInfo. Read once, at start-up. Beside it, the
// protocol revision of Causeway's modern side, written here once.

import { readFileSync } from 'node:fs';

export const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** The MCP revision Causeway's stateless face speaks, and a modern upstream is spoken to in. */
export const MODERN_VERSION = '2026-07-28';
