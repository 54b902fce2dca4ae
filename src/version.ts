// The version of the package this file was installed from (dist/src/version.js -> package.json):
// one source for --version, clientInfo and serverInfo. Read once, at start-up.

import { readFileSync } from 'node:fs';

export const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
