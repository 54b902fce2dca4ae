// The command `conformance client` runs for the upstream leg of Causeway: it puts Causeway in
// front of the scenario's own 2026-07-28 server (the URL it is given) and drives Causeway with
// the SDK 1.32.2 legacy client doing what the scenario asks, so the suite grades the requests
// Causeway itself makes upstream on a legacy client's behalf. Exits 0 when the client's part
// ran; the grading is the suite's.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startCauseway } from '../helpers/causeway.js';

const serverUrl = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as {
  toolCalls?: Array<{ name: string; arguments?: Record<string, unknown> }>;
};
if (!serverUrl) throw new Error('usage: legacy-client-driver <server-url>');

const causeway = await startCauseway({ 'upstream.url': serverUrl, 'log.level': 'warn' });
const client = new Client(
  { name: 'causeway-conformance-driver', version: '1.0.0' },
  { capabilities: { elicitation: {}, sampling: {}, roots: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: 'accept',
  content: { name: 'Ada', user_name: 'Ada', confirm: true },
}));
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: 'assistant',
  content: { type: 'text', text: 'ok' },
  model: 'driver',
  stopReason: 'endTurn',
}));
client.setRequestHandler(ListRootsRequestSchema, async () => ({
  roots: [{ uri: 'file:///tmp/project', name: 'project' }],
}));

async function attempt<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (err) {
    process.stderr.write(`${what}: ${(err as Error).message}\n`);
    return undefined;
  }
}

try {
  await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url!)));
  const tools = (await attempt('tools/list', () => client.listTools()))?.tools ?? [];
  const names = new Set(tools.map((t) => t.name));
  switch (scenario) {
    case 'tools_call':
      await attempt('add_numbers', () => client.callTool({ name: 'add_numbers', arguments: { a: 5, b: 3 } }));
      break;
    case 'sep-2322-client-request-state':
      for (const name of [
        'test_mrtr_echo_state',
        'test_mrtr_no_state',
        'test_mrtr_unrelated',
        'test_mrtr_no_result_type',
      ]) {
        if (names.has(name)) await attempt(name, () => client.callTool({ name, arguments: {} }));
      }
      break;
    case 'http-custom-headers':
      for (const call of context.toolCalls ?? [])
        await attempt(call.name, () => client.callTool({ name: call.name, arguments: call.arguments ?? {} }));
      break;
    case 'http-invalid-tool-headers':
      if (names.has('valid_tool'))
        await attempt('valid_tool', () => client.callTool({ name: 'valid_tool', arguments: {} }));
      break;
    default: {
      const first = tools[0];
      if (first) await attempt(first.name, () => client.callTool({ name: first.name, arguments: {} }));
      const resources = (await attempt('resources/list', () => client.listResources()))?.resources ?? [];
      if (resources[0]) await attempt('resources/read', () => client.readResource({ uri: resources[0]!.uri }));
      const prompts = (await attempt('prompts/list', () => client.listPrompts()))?.prompts ?? [];
      if (prompts[0]) await attempt('prompts/get', () => client.getPrompt({ name: prompts[0]!.name }));
    }
  }
} finally {
  await client.close().catch(() => undefined);
  await causeway.close();
}
process.exit(0);
