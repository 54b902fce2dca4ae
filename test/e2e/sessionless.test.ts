// A session-less upstream (SDK 1.x StreamableHTTPServerTransport with no session id generator:
// a fresh server and transport per POST) behind Causeway. The fixture asks the client anyway,
// going by the capabilities its last initialize declared. An answer POSTed back reaches a fresh
// server that never sent the request, so it can never reach the tool: Causeway refuses the ask
// upstream and ends the call at once with upstream_sessionless, never the 504 that
// upstream.requestTimeoutMs (60 s here, far longer than any of these calls) would give.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import {
  META_CAPABILITIES,
  firstText,
  modernBody,
  modernHeaders,
  post,
  type JsonObject,
  type WireResponse,
} from './wire.js';

const upstream = await startLegacyServer({ stateless: true });
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'upstream.requestTimeoutMs': 60_000 });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

const ALL = { elicitation: { form: {} }, sampling: {}, roots: {} };
const call = (tool: string, args: JsonObject = {}): Promise<WireResponse> =>
  post(
    causeway.url,
    modernBody('tools/call', { name: tool, arguments: args }, tool, { [META_CAPABILITIES]: ALL }),
    modernHeaders('tools/call', tool),
  );

for (const [tool, ask, args] of [
  ['test_input_required_result_elicitation', 'elicitation/create', {}],
  ['test_input_required_result_sampling', 'sampling/createMessage', {}],
  ['test_input_required_result_list_roots', 'roots/list', {}],
  ['test_input_required_result_request_state', 'elicitation/create', {}],
  ['test_input_required_result_multiple_inputs', '(elicitation/create|sampling/createMessage|roots/list)', {}],
  ['test_sampling', 'sampling/createMessage', { prompt: 'hi' }],
  ['test_elicitation', 'elicitation/create', { message: 'who?' }],
] as const) {
  t.test(`modern_client-to-sessionless_upstream-${tool}`, async (t) => {
    const res = await call(tool, args);
    t.equal(res.status, 502, 'ended by the refused ask, not by upstream.requestTimeoutMs (504)');
    t.equal(res.json?.id, tool);
    t.equal(res.json?.error?.code, -32603);
    t.match(res.json?.error?.message, new RegExp(`keeps no sessions, so its ${ask} cannot be answered`));
  });
}

t.test('modern_client-to-sessionless_upstream-control', async (t) => {
  const res = await call('echo', { text: 'one round' });
  t.equal(res.status, 200, 'a call that asks nothing is served as usual');
  t.equal(firstText(res), 'one round');
});
