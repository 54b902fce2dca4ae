// Upstream sessions as the modern face uses them: one per (principal, capability set), the
// capabilities declared upstream exactly as the client declared them, ids and progress tokens
// rewritten so concurrent requests on one session never collide, and any negotiated legacy
// version or a session-less upstream served the same way.

import t, { type Test } from 'tap';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { sseMessages } from '../helpers/sse.js';
import { META_CAPABILITIES, MODERN_VERSION, modernBody, modernHeaders, type JsonObject } from './wire.js';

const V = MODERN_VERSION;

function modern(
  url: string,
  method: string,
  params: JsonObject,
  opts: { id?: string | number; caps?: JsonObject; name?: string; headers?: Record<string, string> } = {},
) {
  const { _meta, ...rest } = params as { _meta?: JsonObject };
  const headers: Record<string, string> = { ...modernHeaders(method), ...opts.headers };
  if (opts.name !== undefined) headers['mcp-name'] = opts.name;
  return fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify(modernBody(method, rest, opts.id ?? 1, { [META_CAPABILITIES]: opts.caps ?? {}, ..._meta })),
  });
}

/** The messages of a response: its JSON body, or the data of each SSE event. */
async function replyMessages(res: Response): Promise<Array<Record<string, unknown>>> {
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream'))
    return [JSON.parse(text) as Record<string, unknown>];
  return sseMessages(text) as Array<Record<string, unknown>>;
}

async function withStack(
  t: Test,
  upstreamOpts: Parameters<typeof startLegacyServer>[0],
  settings: Record<string, string | number> = {},
) {
  const upstream = await startLegacyServer(upstreamOpts);
  const causeway = await startCauseway({ 'upstream.url': upstream.url, ...settings });
  t.teardown(async () => {
    await causeway.close();
    await upstream.close();
  });
  return { upstream, causeway };
}

function text(msg: Record<string, unknown>): string | undefined {
  const result = msg.result as { content?: Array<{ text?: string }> } | undefined;
  return result?.content?.[0]?.text;
}

t.test('one upstream session per capability set, declared exactly as the client declared it', async (t) => {
  const { upstream, causeway } = await withStack(t, {});
  const caps = { sampling: {}, roots: {}, elicitation: { form: {} }, extensions: { 'x.example/ext': {} } };
  const [a] = await replyMessages(
    await modern(causeway.url, 'tools/call', { name: 'whoami', arguments: {} }, { caps, name: 'whoami' }),
  );
  const seen = JSON.parse(text(a!)!) as { clientCapabilities: unknown };
  t.same(
    seen.clientCapabilities,
    { sampling: {}, roots: {}, elicitation: { form: {} } },
    'roots without listChanged, no extensions',
  );
  for (let i = 0; i < 3; i++)
    await modern(causeway.url, 'tools/call', { name: 'counter', arguments: {} }, { caps, name: 'counter' });
  t.equal(upstream.stats().initializeCount, 1, 'same capability set, same session');
  await modern(causeway.url, 'tools/call', { name: 'counter', arguments: {} }, { caps: {}, name: 'counter' });
  t.equal(upstream.stats().initializeCount, 2, 'another capability set, another session');
});

t.test('principals never share a session', async (t) => {
  const { upstream, causeway } = await withStack(
    t,
    {},
    { 'principal.mode': 'bearer', 'principal.hashSecret': 'test-secret-0123456789' },
  );
  const count = async (token: string) =>
    text(
      (
        await replyMessages(
          await modern(
            causeway.url,
            'tools/call',
            { name: 'counter', arguments: {} },
            { name: 'counter', headers: { authorization: `Bearer ${token}` } },
          ),
        )
      )[0]!,
    );
  t.same(
    [await count('alice'), await count('alice'), await count('bob'), await count('alice'), await count('bob')],
    ['1', '2', '1', '3', '2'],
  );
  t.equal(upstream.stats().initializeCount, 2);
  t.notMatch(causeway.logs.join('\n'), /alice|bob/, 'tokens never logged');
});

t.test('concurrent requests with the same id and progress token do not collide', async (t) => {
  const { upstream, causeway } = await withStack(t, {});
  const replies = await Promise.all(
    Array.from({ length: 24 }, () =>
      modern(
        causeway.url,
        'tools/call',
        { name: 'progress_many', arguments: { steps: 3 }, _meta: { progressToken: 'same' } },
        { id: 1, name: 'progress_many' },
      ).then(replyMessages),
    ),
  );
  for (const messages of replies) {
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    t.equal(progress.length, 3, 'each stream gets its own three progress notifications');
    t.ok(
      progress.every((m) => (m.params as { progressToken?: unknown }).progressToken === 'same'),
      'the client token comes back',
    );
    const final = messages[messages.length - 1]!;
    t.equal(final.id, 1, 'the client id comes back');
    t.equal((final.result as { resultType?: string }).resultType, 'complete');
  }
  const echoes = await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      modern(causeway.url, 'tools/call', { name: 'echo', arguments: { text: `n${i}` } }, { id: 7, name: 'echo' }).then(
        replyMessages,
      ),
    ),
  );
  t.same(
    echoes.map((m) => text(m[0]!)),
    Array.from({ length: 24 }, (_, i) => `n${i}`),
    'every request gets its own answer',
  );
  t.equal(upstream.stats().initializeCount, 1);
});

for (const [label, opts, settings] of [
  ['a session-less upstream', { stateless: true }, {}],
  ['an upstream negotiating 2025-03-26', {}, { 'upstream.protocolVersion': '2025-03-26' }],
  ['an upstream negotiating 2025-06-18', {}, { 'upstream.protocolVersion': '2025-06-18' }],
] as const) {
  t.test(`modern requests through ${label}`, async (t) => {
    const { upstream, causeway } = await withStack(t, opts, settings);
    const [d] = await replyMessages(await modern(causeway.url, 'server/discover', {}));
    t.same((d!.result as { supportedVersions?: unknown }).supportedVersions, [V]);
    const [e] = await replyMessages(
      await modern(causeway.url, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }, { name: 'echo' }),
    );
    t.equal(text(e!), 'hi');
    const init = upstream.stats().lastInitializeParams as { protocolVersion?: string } | undefined;
    t.equal(init?.protocolVersion, (settings as Record<string, string>)['upstream.protocolVersion'] ?? '2025-11-25');
  });
}
