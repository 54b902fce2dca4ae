// A legacy -32042 (URL elicitation required) never reaches a 2026 client: with elicitation.url
// declared it becomes a url-mode input_required round whose retry re-issues the call; without
// it the client gets -32021 naming the capability.

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { callTool, textOf } from './wire.js';

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'log.level': 'warn' });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

t.test('declared url elicitation: a url-mode round, then the re-issued call completes', async (t) => {
  const caps = { elicitation: { url: {} } };
  const r1 = await callTool(causeway.url, 'url_sign_in', {}, { caps });
  t.equal(r1.status, 200);
  const result = r1.body.result;
  t.equal(result.resultType, 'input_required');
  const asks = Object.values(
    result.inputRequests as Record<string, { method: string; params: Record<string, unknown> }>,
  );
  t.equal(asks.length, 1);
  t.same(
    asks[0],
    {
      method: 'elicitation/create',
      params: { mode: 'url', url: 'https://auth.example/sign-in', message: 'Please sign in' },
    },
    'no elicitationId',
  );
  t.notMatch(JSON.stringify(r1.body), /-32042/);
  const key = Object.keys(result.inputRequests)[0]!;
  const r2 = await callTool(
    causeway.url,
    'url_sign_in',
    { inputResponses: { [key]: { action: 'accept' } }, requestState: result.requestState },
    { caps },
  );
  t.equal(textOf(r2), 'signed in');
});

t.test('undeclared url elicitation: -32021', async (t) => {
  const r = await callTool(causeway.url, 'url_sign_in', {}, { caps: { elicitation: { form: {} } } });
  t.equal(r.status, 400);
  t.equal(r.body.error.code, -32021);
  t.same(r.body.error.data, { requiredCapabilities: { elicitation: { url: {} } } });
});
