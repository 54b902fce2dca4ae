// Server->client requests the upstream sends outside a call's own stream, on the session's
// standalone GET stream, which Causeway holds from initialize on though nobody listens: with one
// multi-round call in flight the ask becomes a round of that call; with none it is refused at
// once, which the legacy fixture records. The upstream's request timeout is huge, so a hang would
// show as this test's own timeout, never as a quick error.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { callTool, rpc, sleep, textOf } from '../mrtr/wire.js';

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'upstream.requestTimeoutMs': 3_600_000 });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});
const url = causeway.url;
const caps = { roots: {} };

/** Waits for a condition with no deadline of its own: the test's timeout is the only one. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await sleep(20);
}

t.test('outside_asks-legacy_upstream-no_call_in_flight: refused at once', async (t) => {
  const armed = await callTool(url, 'arm_outside_ask', {}, { caps });
  t.equal(textOf(armed), 'armed');
  // Nobody listens: the stream is Causeway's own. Once it is open the ask can reach it.
  await until(() => upstream.stats().getStreamsOpen === 1);
  t.equal(upstream.stats().getStreamsOpen, 1, 'the pooled session holds its GET stream without a listener');
  const list = await rpc(url, 'prompts/list', {}, { caps });
  t.equal(list.status, 200, 'a call that cannot ask is not taken for the ask');
  await until(() => upstream.stats().outsideAnswers.length > 0);
  t.same(upstream.stats().outsideAnswers, [{ error: { code: -32601, message: 'MCP error -32601: No call in flight can take this request' } }], 'answered with an error');
});

t.test('outside_asks-legacy_upstream-one_call_in_flight: the ask is a round of that call', async (t) => {
  await until(() => upstream.stats().getStreamsOpen === 1);
  const r1 = await callTool(url, 'roots_outside', {}, { caps });
  t.equal(r1.status, 200);
  const result = r1.body.result;
  t.equal(result?.resultType, 'input_required', 'the ask from the GET stream came back as a round');
  const keys = Object.keys(result?.inputRequests ?? {});
  t.equal(keys.length, 1);
  t.same(result.inputRequests[keys[0]!], { method: 'roots/list', params: {} });
  const done = await callTool(url, 'roots_outside', { inputResponses: { [keys[0]!]: { roots: [{ uri: 'file:///work', name: 'work' }] } }, requestState: result.requestState }, { caps });
  t.equal(done.body.result?.resultType, 'complete');
  t.equal(textOf(done), 'roots=1; first=file:///work', "the tool got the client's answer");
});
