// Multi-round retries across replicas: the first round answered on A, the retry sent to B, is
// handed to A (which holds the upstream call) and completes without running the tool twice;
// with A killed between rounds, B takes the call up on its upstream stream and still completes
// (test/e2e/resume.test.ts covers resume and replay in depth).

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { spawnCauseway } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { META_CAPABILITIES, modernBody, modernHeaders, type JsonObject } from './wire.js';

const upstream = await startLegacyServer();
const redis = await startRedis();
const stateKeys = randomBytes(32).toString('base64');
const settings = {
  'upstream.url': upstream.url,
  'store.kind': 'redis',
  'store.redisUrl': redis.url,
  'mrtr.stateKeys': stateKeys,
};
const a = await spawnCauseway(settings);
const b = await spawnCauseway(settings);
t.teardown(async () => {
  await Promise.all([a.close(), b.close()]);
  await upstream.close();
  await redis.stop();
});

const CAPS = { elicitation: { form: {} } };
let nextId = 1;

interface Reply {
  status: number;
  result?: {
    resultType?: string;
    inputRequests?: Record<string, unknown>;
    requestState?: string;
    content?: Array<{ text?: string }>;
  };
  error?: { code: number; message: string };
}

async function call(url: string, name: string, extra: Record<string, unknown> = {}): Promise<Reply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: modernHeaders('tools/call', name),
    body: JSON.stringify(
      modernBody('tools/call', { name, arguments: {}, ...extra } as JsonObject, nextId++, {
        [META_CAPABILITIES]: CAPS,
      }),
    ),
  });
  const body = (await res.json()) as Omit<Reply, 'status'>;
  return { status: res.status, ...body };
}

const calls = (tool: string) => upstream.stats().toolCalls[tool] ?? 0;

t.test('modern_client-to-legacy_upstream-retry-on-another-replica-is-handed-to-the-holder', async (t) => {
  const tool = 'test_input_required_result_multi_round';
  const before = calls(tool);
  const r1 = await call(a.url, tool);
  t.equal(r1.result?.resultType, 'input_required', 'round 1 on A');
  const r2 = await call(b.url, tool, {
    inputResponses: { step1: { action: 'accept', content: { name: 'Alice' } } },
    requestState: r1.result?.requestState,
  });
  t.equal(r2.result?.resultType, 'input_required', 'round 2 comes back through B');
  t.ok(r2.result?.inputRequests?.step2, 'the second question');
  t.not(r2.result?.requestState, r1.result?.requestState);
  const r3 = await call(a.url, tool, {
    inputResponses: { step2: { action: 'accept', content: { color: 'blue' } } },
    requestState: r2.result?.requestState,
  });
  t.equal(r3.result?.content?.[0]?.text, 'Multi-round complete for Alice who likes blue');
  t.equal(calls(tool) - before, 1, 'the tool ran once: no replay');
  const again = await call(b.url, tool, {
    inputResponses: { step1: { action: 'accept', content: { name: 'Eve' } } },
    requestState: r1.result?.requestState,
  });
  t.equal(again.error?.code, -32602, 'a used state is refused, whichever replica it lands on');
});

t.test('modern_client-to-legacy_upstream-holder-killed-between-rounds-resumes', async (t) => {
  const tool = 'test_input_required_result_elicitation';
  const before = calls(tool);
  const r1 = await call(a.url, tool);
  t.equal(r1.result?.resultType, 'input_required');
  a.child.kill('SIGKILL');
  await new Promise((r) => a.child.once('exit', r));
  const started = Date.now();
  const r2 = await call(b.url, tool, {
    inputResponses: { user_name: { action: 'accept', content: { name: 'Bob' } } },
    requestState: r1.result?.requestState,
  });
  t.equal(r2.result?.content?.[0]?.text, 'Hello, Bob!', 'the resumed call completes with the given answer');
  t.comment(`answered ${Date.now() - started} ms after the retry was sent`);
  t.equal(calls(tool) - before, 1, 'the original call only: resumed, not replayed');
});
