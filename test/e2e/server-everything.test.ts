// A server nobody here wrote: @modelcontextprotocol/server-everything in its stdio mode as
// Causeway's stdio upstream, the real 2026-07-28 client (@modelcontextprotocol/client 2.4.0) in
// front. echo, a sampling request and an elicitation request answered by the client (each a
// multi-round call through Causeway), and a listen that hears the resource list change a tool
// makes.

import t from 'tap';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startCauseway } from '../helpers/causeway.js';
import { rawListen } from '../helpers/listen.js';
import { post, toolCall } from './wire.js';

const pkg = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json');
const EVERYTHING = join(dirname(pkg), 'dist', 'index.js');

const causeway = await startCauseway({
  'upstream.transport': 'stdio',
  'upstream.command': process.execPath,
  'upstream.args': `${EVERYTHING},stdio`,
  'upstream.name': 'everything',
  'log.level': 'warn',
});
t.teardown(() => causeway.close());

t.test('modern_client-to-server_everything_stdio-echo-sampling-elicitation', async (t) => {
  const client = new Client(
    { name: 'e2e-everything', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { sampling: {}, elicitation: { form: {} } } },
  );
  let sampled = 0;
  let elicited = 0;
  client.setRequestHandler('sampling/createMessage', async () => {
    sampled++;
    return { model: 'test-model', role: 'assistant', content: { type: 'text', text: 'a sampled answer' } };
  });
  client.setRequestHandler('elicitation/create', async () => {
    elicited++;
    return { action: 'accept', content: { name: 'Ada Lovelace', check: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url)));
  t.teardown(() => client.close());

  t.equal(client.getServerVersion()?.name, 'mcp-servers/everything', 'serverInfo from the stdio server');
  const names = (await client.listTools()).tools.map((x) => x.name);
  t.ok(names.includes('echo') && names.includes('trigger-sampling-request') && names.includes('trigger-elicitation-request'), 'its tools');

  const echo = await client.callTool({ name: 'echo', arguments: { message: 'through a stdio child' } });
  t.match(JSON.stringify(echo.content), /through a stdio child/);

  const sampling = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 20 } });
  t.equal(sampled, 1, 'the sampling request reached the client once');
  t.match(JSON.stringify(sampling.content), /a sampled answer/, "the server's result carries the client's answer");

  const elicitation = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
  t.equal(elicited, 1, 'the elicitation request reached the client once');
  t.match(JSON.stringify(elicitation.content), /Ada Lovelace/, "the server's result carries the client's answer");
});

t.test('modern_client-to-server_everything_stdio-listen-hears-a-resource-list-change', async (t) => {
  const listen = await rawListen(t, causeway.url, 'everything-listen', { resourcesListChanged: true });
  t.equal(listen.status, 200);
  t.equal((await listen.next())?.method, 'notifications/subscriptions/acknowledged');
  // The tool registers a session resource: the server announces its resource list changed.
  const { body, headers } = toolCall('gzip-file-as-resource', { name: 'hello.txt.gz', data: 'data:text/plain;base64,aGVsbG8=' }, 'gzip');
  const call = await post(causeway.url, body, headers);
  t.equal(call.status, 200, `the tool ran: ${call.text.slice(0, 200)}`);
  const change = await listen.next();
  t.equal(change?.method, 'notifications/resources/list_changed', 'the change reached the listener');
});
