// A server nobody here wrote: @modelcontextprotocol/server-everything behind Causeway, in its stdio
// mode (Causeway's stdio upstream), its sse mode (a 2024-11-05 HTTP+SSE upstream) and its
// streamableHttp mode, the real 2026-07-28 client (@modelcontextprotocol/client 2.4.0) in front.
// The same checks for all: echo, a sampling request and an elicitation request answered by the
// client (each a multi-round call through Causeway), get-roots-list (whose roots/list names no
// request: on Streamable HTTP it comes on the session's GET stream), a listen that hears the
// resource list change a tool makes, and (stdio and streamableHttp) simulate-research-query, a
// tool that runs only as a 2025-11-25 task, run as a task of the tasks extension, its clarifying
// question answered through tasks/update. The 2.4.0 client sends no tasks/* at 2026-07-28, so the task is driven raw.
// Behind two replicas sharing Redis, get-roots-list called on the replica that does not hold the
// session's GET stream still gets its roots/list answered. On Streamable HTTP a session's GET
// stream is held once the server was seen asking outside a call (upstream.standingStream=auto):
// server-everything asks the roots of every client that declared them, Causeway's scout session
// among them, as soon as it is initialized; each get-roots-list waits for that first.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startCauseway, type Settings } from '../helpers/causeway.js';
import { rawListen } from '../helpers/listen.js';
import { spawnOwned } from '../helpers/processes.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { metricValue } from '../helpers/metrics.js';
import { until } from '../helpers/until.js';
import { META_CAPABILITIES, modernBody, modernHeaders, post, toolCall, type JsonObject } from './wire.js';

const pkg = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json');
const EVERYTHING = join(dirname(pkg), 'dist', 'index.js');
/** server-everything in an HTTP mode on a free port (it reads PORT), stopped when `t` ends; once it says `ready`. */
async function everythingOverHttp(t: Test, mode: string, ready: string): Promise<number> {
  const port = await freePort();
  const child = spawnOwned(process.execPath, [EVERYTHING, mode], {
    t,
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let said = '';
    const onData = (d: Buffer): void => {
      said += d.toString();
      if (!said.includes(ready)) return;
      child.stderr!.off('data', onData).resume();
      resolve();
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server-everything exited with ${code}: ${said}`)));
  });
  return port;
}

const MODES: Record<string, (t: Test) => Promise<Settings>> = {
  stdio: async () => ({
    'upstream.transport': 'stdio',
    'upstream.command': process.execPath,
    'upstream.args': `${EVERYTHING},stdio`,
  }),
  sse: async (t) => ({
    'upstream.transport': 'sse',
    'upstream.url': `http://127.0.0.1:${await everythingOverHttp(t, 'sse', 'Server is running on port')}/sse`,
  }),
  streamableHttp: async (t) => ({
    'upstream.url': `http://127.0.0.1:${await everythingOverHttp(
      t,
      'streamableHttp',
      'MCP Streamable HTTP Server listening on port',
    )}/mcp`,
  }),
};

async function echoSamplingElicitation(t: Test, url: string): Promise<void> {
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
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.teardown(() => client.close());

  t.equal(client.getServerVersion()?.name, 'mcp-servers/everything', 'serverInfo from the server');
  const names = (await client.listTools()).tools.map((x) => x.name);
  t.ok(
    names.includes('echo') &&
      names.includes('trigger-sampling-request') &&
      names.includes('trigger-elicitation-request'),
    'its tools',
  );

  const echo = await client.callTool({ name: 'echo', arguments: { message: 'through Causeway' } });
  t.match(JSON.stringify(echo.content), /through Causeway/);

  const sampling = await client.callTool({
    name: 'trigger-sampling-request',
    arguments: { prompt: 'hello', maxTokens: 20 },
  });
  t.equal(sampled, 1, 'the sampling request reached the client once');
  t.match(JSON.stringify(sampling.content), /a sampled answer/, "the server's result carries the client's answer");

  const elicitation = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
  t.equal(elicited, 1, 'the elicitation request reached the client once');
  t.match(JSON.stringify(elicitation.content), /Ada Lovelace/, "the server's result carries the client's answer");
}

const rootsClient = () =>
  new Client(
    { name: 'e2e-everything-roots', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { roots: {} } },
  );

/** Resolves once every replica learned that the upstream asks outside a call (a scout came with an asking client). */
async function learned(adminUrls: Array<string | undefined>): Promise<void> {
  const one = async (adminUrl: string | undefined) =>
    (await metricValue(adminUrl, 'causeway_upstream_asks_outside_calls')) === 1;
  await until(async () => (await Promise.all(adminUrls.map(one))).every(Boolean), {
    what: 'the replicas to learn that server-everything asks outside a call',
  });
}

/** Its roots/list is a round of the call (a hang would be this test's timeout: requestTimeoutMs is huge). */
async function rootsList(t: Test, url: string): Promise<void> {
  const client = rootsClient();
  let asked = 0;
  client.setRequestHandler('roots/list', async () => {
    asked++;
    return { roots: [{ uri: 'file:///work/causeway', name: 'causeway' }] };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.teardown(() => client.close());
  const r = await client.callTool({ name: 'get-roots-list', arguments: {} });
  t.ok(asked >= 1, 'the roots/list reached the client in an input_required round');
  t.match(JSON.stringify(r.content), /file:\/\/\/work\/causeway/, "the server's answer lists the client's root");
}

async function listenHearsResourceListChange(t: Test, url: string): Promise<void> {
  const listen = await rawListen(t, url, 'everything-listen', { resourcesListChanged: true });
  t.equal(listen.status, 200);
  t.equal((await listen.next())?.method, 'notifications/subscriptions/acknowledged');
  // The tool registers a session resource: the server announces its resource list changed.
  const { body, headers } = toolCall(
    'gzip-file-as-resource',
    { name: 'hello.txt.gz', data: 'data:text/plain;base64,aGVsbG8=' },
    'gzip',
  );
  const call = await post(url, body, headers);
  t.equal(call.status, 200, `the tool ran: ${call.text.slice(0, 200)}`);
  const change = await listen.next();
  t.equal(change?.method, 'notifications/resources/list_changed', 'the change reached the listener');
}

const TASKS = 'io.modelcontextprotocol/tasks';

async function researchAsTask(t: Test, url: string): Promise<void> {
  let id = 1;
  const rpc = (method: string, params: JsonObject, name: string, caps: JsonObject) =>
    post(
      url,
      modernBody(method, params, `research-${id++}`, { [META_CAPABILITIES]: caps }),
      modernHeaders(method, name),
    );
  const caps: JsonObject = { elicitation: { form: {} }, extensions: { [TASKS]: {} } };
  const args = { topic: 'python', ambiguous: true };

  const refused = await rpc(
    'tools/call',
    { name: 'simulate-research-query', arguments: args },
    'simulate-research-query',
    { elicitation: { form: {} } },
  );
  t.equal(refused.json?.error?.code, -32021, 'without the extension the tool cannot run');
  t.ok(refused.json?.error?.data?.requiredCapabilities?.extensions?.[TASKS], 'the error names the extension');

  const created = await rpc(
    'tools/call',
    { name: 'simulate-research-query', arguments: args },
    'simulate-research-query',
    caps,
  );
  t.equal(created.json?.result?.resultType, 'task', `a task: ${created.text.slice(0, 200)}`);
  const taskId = created.json.result.taskId as string;
  const task = async () => (await rpc('tasks/get', { taskId }, taskId, caps)).json?.result;
  let asking: any;
  await until(async () => (asking = await task())?.status === 'input_required', {
    what: 'the clarifying question',
    timeoutMs: 60_000,
    everyMs: 100,
  });
  const [key, ask] = Object.entries(asking.inputRequests as Record<string, any>)[0]!;
  t.equal(ask.method, 'elicitation/create', "the server's question, as an input request");
  t.notOk(JSON.stringify(ask.params).includes('related-task'), 'without the legacy related-task tag');
  const ack = await rpc(
    'tasks/update',
    { taskId, inputResponses: { [key]: { action: 'accept', content: { interpretation: 'programming' } } } },
    taskId,
    caps,
  );
  t.same(ack.json?.result, { resultType: 'complete' });
  let done: any;
  await until(async () => (done = await task())?.status === 'completed', {
    what: 'the research to finish',
    timeoutMs: 60_000,
    everyMs: 100,
  });
  t.match(done.result.content[0].text, /python \(programming\)/, "the report carries the client's answer");
}

for (const [mode, settings] of Object.entries(MODES)) {
  t.test(`server-everything in its ${mode} mode`, async (t) => {
    const causeway = await startCauseway({
      ...(await settings(t)),
      'upstream.name': 'everything',
      'log.level': 'warn',
      'upstream.requestTimeoutMs': 3_600_000,
    });
    t.teardown(() => causeway.close());
    await t.test(`modern_client-to-server_everything_${mode}-echo-sampling-elicitation`, (t) =>
      echoSamplingElicitation(t, causeway.url),
    );
    await t.test(`modern_client-to-server_everything_${mode}-get_roots_list`, async (t) => {
      if (mode === 'streamableHttp') await learned([causeway.adminUrl]);
      await rootsList(t, causeway.url);
    });
    await t.test(`modern_client-to-server_everything_${mode}-listen-hears-a-resource-list-change`, (t) =>
      listenHearsResourceListChange(t, causeway.url),
    );
    // The sse mode shares its channel code with stdio: the research (four seconds a run) runs on stdio and
    // streamableHttp.
    if (mode !== 'sse')
      await t.test(`raw_client-to-server_everything_${mode}-research-runs-as-a-task`, (t) =>
        researchAsTask(t, causeway.url),
      );
  });
}

t.test('server-everything in its streamableHttp mode, behind two replicas sharing Redis', async (t) => {
  const redis = await startRedis(t);
  t.teardown(() => redis.stop());
  const settings: Settings = {
    ...(await MODES.streamableHttp!(t)),
    'upstream.name': 'everything',
    'log.level': 'warn',
    'upstream.requestTimeoutMs': 3_600_000,
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
  };
  const a = await startCauseway(settings);
  t.teardown(() => a.close());
  const b = await startCauseway(settings);
  t.teardown(() => b.close());
  // A client with the same capabilities on A opens the upstream session there: A holds its GET stream.
  const opener = rootsClient();
  await opener.connect(new StreamableHTTPClientTransport(new URL(a.url)));
  t.teardown(() => opener.close());
  await opener.listTools();
  await learned([a.adminUrl, b.adminUrl]);
  await t.test('modern_client-to-server_everything_streamableHttp-get_roots_list-on-the-other-replica', (t) =>
    rootsList(t, b.url),
  );
});
