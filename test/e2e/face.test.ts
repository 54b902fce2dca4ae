// Deviations a modern client could meet on Causeway's face, each against the legacy fixture over
// real HTTP: a stray Mcp-Session-Id beside the 2026 envelope, and an Accept that takes JSON only
// from a request that asked for progress or logs. (Recoded error messages: errors.test.ts.)

import t from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { firstText, post, toolCall } from './wire.js';

const upstream = await startLegacyServer();
const causeway = await startCauseway({ 'upstream.url': upstream.url });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
});

async function dropped(kind: 'progress' | 'log'): Promise<number> {
  const text = await (await fetch(`${causeway.adminUrl}/metrics`)).text();
  const line = new RegExp(
    `^causeway_notifications_dropped_total\\{upstream="[^"]+",kind="${kind}"\\} (\\d+)$`,
    'm',
  ).exec(text);
  return Number(line?.[1] ?? 0);
}

t.test('modern_client-to-causeway-face-stray_session_id', async (t) => {
  const call = toolCall('echo', { text: 'stray' }, 'stray');
  const res = await post(causeway.url, call.body, { ...call.headers, 'mcp-session-id': 'not-a-session-of-ours' });
  t.equal(res.status, 200, 'served, not refused as an unknown legacy session');
  t.equal(res.json?.id, 'stray');
  t.equal(res.json?.result?.resultType, 'complete', 'a 2026 answer: the header was ignored');
  t.equal(firstText(res), 'stray');
});

for (const [kind, tool, meta] of [
  ['progress', 'test_tool_with_progress', { progressToken: 'p-1' }],
  ['log', 'test_tool_with_logging', { 'io.modelcontextprotocol/logLevel': 'debug' }],
] as const) {
  t.test(`modern_client-to-causeway-face-json_only_accept-${kind}`, async (t) => {
    const before = await dropped(kind);
    const call = toolCall(tool, {}, `json-${kind}`, meta);
    const res = await post(causeway.url, call.body, { ...call.headers, accept: 'application/json' });
    t.equal(res.status, 200);
    t.match(res.headers['content-type'], /^application\/json/, 'a JSON answer, not text/event-stream');
    t.equal(res.json?.result?.resultType, 'complete');
    t.ok(firstText(res), "the tool's own answer");
    t.ok((await dropped(kind)) > before, `the ${kind} notifications the tool sent were counted as dropped`);

    const streamed = await post(causeway.url, toolCall(tool, {}, `sse-${kind}`, meta).body, call.headers);
    t.match(
      streamed.headers['content-type'],
      /^text\/event-stream/,
      'control: with text/event-stream listed the answer streams',
    );
  });
}
