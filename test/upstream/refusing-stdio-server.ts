// A stdio server that refuses every initialize, as one missing its licence or configuration
// does: it answers with a JSON-RPC error and stays running. Each process appends its pid to the
// file named by its first argument, so a test counts the processes started.

import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const ledger = process.argv[2];
if (ledger !== undefined) appendFileSync(ledger, `${process.pid}\n`);

createInterface({ input: process.stdin }).on('line', (line) => {
  let msg: { id?: unknown; method?: unknown };
  try {
    msg = JSON.parse(line) as typeof msg;
  } catch {
    return;
  }
  if (msg.id === undefined) return;
  const error = { code: -32600, message: 'MCP_LICENSE_KEY is not set' };
  process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, error })}\n`);
});
process.stdin.on('end', () => process.exit(0));
