// The real clients the mount tests connect with: the 2026 client (@modelcontextprotocol/client,
// pinned to 2026-07-28) and the legacy SDK client (1.32.2), each closed when its test ends.

import type { Test } from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** The 2026 client, connected to `url` (pinned to 2026-07-28, no capabilities). */
export async function connectModern(t: Pick<Test, 'teardown'>, url: URL, name: string): Promise<Client> {
  const client = new Client(
    { name, version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(new StreamableHTTPClientTransport(url));
  t.teardown(() => client.close());
  return client;
}

/** The legacy SDK client, connected to `url`. */
export async function connectLegacy(t: Pick<Test, 'teardown'>, url: URL, name: string): Promise<LegacyClient> {
  const client = new LegacyClient({ name, version: '1.0.0' });
  await client.connect(new LegacyTransport(url));
  t.teardown(() => client.close());
  return client;
}
