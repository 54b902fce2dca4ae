// `npm run demo`: Causeway on 127.0.0.1:8080 in front of the bundled legacy server (built on the
// legacy MCP SDK), with the in-memory session store. Prints a curl line that works.

import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { startLegacyServer } from '../test/fixtures/legacy-server.js';

const legacy = await startLegacyServer({ port: 0 });
const config = loadConfig(
  ['--upstream.url', legacy.url, '--log.level', 'warn', '--drain.delayMs', '0', ...process.argv.slice(2)],
  process.env,
);
const app = createApp(config, createLogger(config.log.level));
await app.listen();

const body = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: {
    name: 'echo',
    arguments: { text: 'hello from a legacy server' },
    _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  },
});
process.stdout.write(
  [
    `legacy MCP server (2025-11-25, SDK 1.x): ${legacy.url}`,
    `causeway (MCP 2026-07-28 face):          ${app.url}`,
    ...(app.adminUrl ? [`causeway metrics:                        ${app.adminUrl}/metrics`] : []),
    '',
    'try:',
    `curl -s ${app.url} \\`,
    `  -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \\`,
    `  -H 'mcp-protocol-version: 2026-07-28' -H 'mcp-method: tools/call' -H 'mcp-name: echo' \\`,
    `  -d '${body}'`,
    '',
    'Ctrl-C stops both.',
    '',
  ].join('\n'),
);

const stop = async () => {
  await app.drain();
  await legacy.close();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
