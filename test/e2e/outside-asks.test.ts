// Server->client requests the upstream sends outside a call's own stream: on a Streamable HTTP
// upstream they come on the session's standalone GET stream, which Causeway holds from initialize
// on though nobody listens (upstream.standingStream=always here: how auto learns to hold it is
// streams-per-upstream.test.ts's); on stdio and HTTP+SSE upstreams every message comes on the session's
// one channel. With one multi-round call in flight the ask becomes a round of that call; with none
// it is refused at once, which the legacy fixture records. The upstream's request timeout is huge,
// so a hang would show as this test's own timeout, never as a quick error. Across two replicas
// sharing Redis one of them holds the session's GET stream though nobody listens, and an ask on it
// reaches the call on the other replica; when the holder is killed the other takes the stream over.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startLegacyServer, type LegacyServerStats } from '../fixtures/legacy-server.js';
import { spawnCauseway, startCauseway, type Settings } from '../helpers/causeway.js';
import { startRedis } from '../helpers/redis.js';
import { callTool, rpc, textOf } from '../mrtr/wire.js';
import { until } from '../helpers/until.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/legacy-server.js', import.meta.url));
const caps = { roots: {} };

/** causeway_outside_asks_total of one outcome, from a replica's /metrics. */
async function outsideAsks(adminUrl: string | undefined, outcome: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = new RegExp(`^causeway_outside_asks_total\\{upstream="[^"]+",outcome="${outcome}"\\} (\\d+)$`, 'm').exec(
    text,
  );
  return Number(line?.[1] ?? 0);
}

interface Upstream {
  settings: Settings;
  stats(url: string): Promise<LegacyServerStats>;
  /** Resolves once what the server sends outside a call can reach Causeway. */
  ready(): Promise<void>;
}

async function streamable(t: Test): Promise<Upstream> {
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  return {
    settings: { 'upstream.url': upstream.url, 'upstream.standingStream': 'always' },
    stats: async () => upstream.stats(),
    // Nobody listens: the GET stream is Causeway's own.
    ready: async () => {
      await until(() => upstream.stats().getStreamsOpen === 1, { what: 'the GET stream' });
    },
  };
}

async function sse(t: Test): Promise<Upstream> {
  const upstream = await startLegacyServer({ transport: 'sse' });
  t.teardown(() => upstream.close());
  return {
    settings: { 'upstream.transport': 'sse', 'upstream.url': upstream.url },
    stats: async () => upstream.stats(),
    ready: async () => undefined,
  };
}

async function stdio(): Promise<Upstream> {
  return {
    settings: {
      'upstream.transport': 'stdio',
      'upstream.command': process.execPath,
      'upstream.args': `${FIXTURE},--stdio`,
    },
    stats: async (url) =>
      (JSON.parse(textOf(await callTool(url, 'fixture_stats', {}, { caps })) ?? '{}') as { stats: LegacyServerStats })
        .stats,
    ready: async () => undefined,
  };
}

const UPSTREAMS: Record<string, (t: Test) => Promise<Upstream>> = { streamable_http: streamable, sse, stdio };

for (const [name, make] of Object.entries(UPSTREAMS)) {
  t.test(`outside_asks-${name}_upstream`, async (t) => {
    const upstream = await make(t);
    const causeway = await startCauseway({
      ...upstream.settings,
      'upstream.name': 'fixture',
      'upstream.requestTimeoutMs': 3_600_000,
    });
    t.teardown(() => causeway.close());
    const url = causeway.url;

    await t.test('no call in flight: refused at once', async (t) => {
      const armed = await callTool(url, 'arm_outside_ask', {}, { caps });
      t.equal(textOf(armed), 'armed');
      await upstream.ready();
      const list = await rpc(url, 'prompts/list', {}, { caps });
      t.equal(list.status, 200, 'a call that cannot ask is not taken for the ask');
      let answers: LegacyServerStats['outsideAnswers'] = [];
      await until(async () => (answers = (await upstream.stats(url)).outsideAnswers).length > 0, {
        what: 'the answer to the outside ask',
      });
      t.equal(answers.length, 1);
      t.match(answers[0], { error: { code: -32601 } }, 'answered with an error');
      // On a channel the call in flight (prompts/list) is the one that refuses it, saying so.
      t.match(answers[0], {
        error: {
          message:
            name === 'streamable_http'
              ? /No call in flight can take this request/
              : /roots\/list is not available during prompts\/list/,
        },
      });
    });

    await t.test('one call in flight: the ask is a round of that call', async (t) => {
      await upstream.ready();
      const r1 = await callTool(url, 'roots_outside', {}, { caps });
      t.equal(r1.status, 200);
      const result = r1.body.result;
      t.equal(result?.resultType, 'input_required', 'the ask came back as a round');
      const keys = Object.keys(result?.inputRequests ?? {});
      t.equal(keys.length, 1);
      t.same(result.inputRequests[keys[0]!], { method: 'roots/list', params: {} });
      const answer = { [keys[0]!]: { roots: [{ uri: 'file:///work', name: 'work' }] } };
      const done = await callTool(
        url,
        'roots_outside',
        { inputResponses: answer, requestState: result.requestState },
        { caps },
      );
      t.equal(done.body.result?.resultType, 'complete');
      t.equal(textOf(done), 'roots=1; first=file:///work', "the tool got the client's answer");
    });

    // Which call an ask on the GET stream belongs to is then unknown: none is guessed.
    if (name === 'streamable_http') {
      await t.test('two calls in flight: refused at once', async (t) => {
        await upstream.ready();
        const before = (await upstream.stats(url)).toolCalls['slow'] ?? 0;
        const stop = new AbortController();
        const slow = callTool(url, 'slow', { arguments: { ms: 3_600_000 } }, { caps, signal: stop.signal }).catch(
          () => undefined,
        );
        t.teardown(() => {
          stop.abort();
          return slow;
        });
        await until(async () => ((await upstream.stats(url)).toolCalls['slow'] ?? 0) > before, {
          what: 'the slow call upstream',
        });
        const r = await callTool(url, 'roots_outside', {}, { caps });
        t.not(r.body.result?.resultType, 'input_required', 'no round for either call');
        // The tool fails with the refusal it got (-32601, which a 2026 answer carries as 404).
        t.match(
          r.body.error,
          { code: -32601, message: /No call in flight can take this request/ },
          'the tool saw the ask refused',
        );
      });

      await t.test('each ask from the GET stream is counted by where it went', async (t) => {
        t.equal(await outsideAsks(causeway.adminUrl, 'given'), 1, 'one given to its call');
        t.equal(await outsideAsks(causeway.adminUrl, 'refused'), 2, 'two refused');
        t.equal(await outsideAsks(causeway.adminUrl, 'handed'), 0, 'none handed: one replica');
      });
    }
  });
}

/** A Redis and the legacy fixture, stopped when `t` ends; the settings that put replicas in front of them. */
async function redisAndUpstream(t: Test) {
  const redis = await startRedis(t);
  t.teardown(() => redis.stop());
  const upstream = await startLegacyServer();
  t.teardown(() => upstream.close());
  const shared: Settings = {
    'upstream.url': upstream.url,
    'upstream.standingStream': 'always',
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
  };
  return { upstream, shared };
}

t.test('outside_asks-across_replicas', async (t) => {
  const { upstream, shared } = await redisAndUpstream(t);
  const settings: Settings = {
    ...shared,
    'upstream.requestTimeoutMs': 3_600_000,
    'subscriptions.takeoverMs': 1000,
    // Where nobody listens, a replica takes a dead holder's stream over on this tick.
    'subscriptions.keepAliveMs': 500,
  };
  const [a, b] = await Promise.all([spawnCauseway(settings, { t }), spawnCauseway(settings, { t })]);
  const outsideAnswers = () => upstream.stats().outsideAnswers;

  // A opens the session, so A holds its GET stream; B has it in its pool and stands by.
  t.equal(textOf(await callTool(a.url, 'arm_outside_ask', {}, { caps })), 'armed');
  await until(() => upstream.stats().getStreamsOpen === 1, { what: 'the GET stream' });
  const openedByA = upstream.stats().getStreamsOpened;

  await t.test('no call in flight on any replica: refused at once', async (t) => {
    const before = outsideAnswers().length;
    const list = await rpc(b.url, 'prompts/list', {}, { caps });
    t.equal(list.status, 200);
    await until(() => outsideAnswers().length > before, { what: 'the answer to the outside ask' });
    t.match(outsideAnswers()[before], { error: { code: -32601, message: /No call in flight can take this request/ } });
  });

  await t.test('the one call is on the replica that does not hold the stream: the ask is its round', async (t) => {
    const r1 = await callTool(b.url, 'roots_outside', {}, { caps });
    t.equal(r1.body.result?.resultType, 'input_required', 'the ask reached the call on B');
    const keys = Object.keys(r1.body.result?.inputRequests ?? {});
    t.same(r1.body.result?.inputRequests?.[keys[0]!], { method: 'roots/list', params: {} });
    // The retry lands on A, which hands it to B, whose call answers the upstream.
    const answer = { [keys[0]!]: { roots: [{ uri: 'file:///work', name: 'work' }] } };
    const done = await callTool(
      a.url,
      'roots_outside',
      { inputResponses: answer, requestState: r1.body.result.requestState },
      { caps },
    );
    t.equal(done.body.result?.resultType, 'complete');
    t.equal(textOf(done), 'roots=1; first=file:///work', "the tool got the client's answer");
    t.equal(upstream.stats().getStreamsOpened, openedByA, 'the stream is still the one A opened');
    t.equal(await outsideAsks(a.adminUrl, 'handed'), 1, 'A counts the ask it handed to B');
    t.equal(
      (await outsideAsks(b.adminUrl, 'handed')) + (await outsideAsks(b.adminUrl, 'given')),
      0,
      'B held no stream, so counted none',
    );
  });

  await t.test('one call on each replica: which one asked is unknown, refused at once', async (t) => {
    const before = upstream.stats().toolCalls['slow'] ?? 0;
    const stop = new AbortController();
    const slow = callTool(a.url, 'slow', { arguments: { ms: 3_600_000 } }, { caps, signal: stop.signal }).catch(
      () => undefined,
    );
    t.teardown(() => {
      stop.abort();
      return slow;
    });
    await until(() => (upstream.stats().toolCalls['slow'] ?? 0) > before, { what: 'the slow call upstream' });
    const r = await callTool(b.url, 'roots_outside', {}, { caps });
    t.match(
      r.body.error,
      { code: -32601, message: /No call in flight can take this request/ },
      'the tool saw the ask refused',
    );
  });

  await t.test('the holder is killed: the other replica takes the stream, and the asks, over', async (t) => {
    const opened = upstream.stats().getStreamsOpened;
    a.child.kill('SIGKILL');
    await new Promise((r) => a.child.once('exit', r));
    await until(() => upstream.stats().getStreamsOpened > opened && upstream.stats().getStreamsOpen === 1, {
      what: 'B to open the GET stream',
    });
    const r1 = await callTool(b.url, 'roots_outside', {}, { caps });
    t.equal(r1.body.result?.resultType, 'input_required', 'the ask came on the stream B holds now');
    const keys = Object.keys(r1.body.result?.inputRequests ?? {});
    const answer = { [keys[0]!]: { roots: [] } };
    const done = await callTool(
      b.url,
      'roots_outside',
      { inputResponses: answer, requestState: r1.body.result.requestState },
      { caps },
    );
    t.equal(textOf(done), 'roots=0; first=none');
  });
});

t.test('outside_asks-across_replicas-holding_the_stream_does_not_keep_the_session_in_use', async (t) => {
  const { upstream, shared } = await redisAndUpstream(t);
  const settings: Settings = {
    ...shared,
    'store.idleTtlMs': 1000,
    // The channels' tick, which would keep a listened session in use, comes often.
    'subscriptions.keepAliveMs': 100,
  };
  const a = await startCauseway(settings);
  t.teardown(() => a.close());
  const b = await startCauseway(settings);
  t.teardown(() => b.close());
  // Both replicas have the session in their pool (or, on a machine slow enough that it idled out
  // between the two requests, each had one in turn): a replica holds its stream, the other stands by.
  t.equal((await rpc(a.url, 'tools/list', {}, { caps })).status, 200);
  t.equal((await rpc(b.url, 'tools/list', {}, { caps })).status, 200);
  await until(() => upstream.stats().getStreamsOpened >= 1, { what: 'the GET stream' });
  // Nobody uses the session now: it is ended as idle, stream and all.
  await until(() => upstream.stats().sessionsOpen === 0 && upstream.stats().getStreamsOpen === 0, {
    what: 'the idle session to end',
  });
  t.ok(upstream.stats().sessionsDeleted >= 1, 'the idle session was ended upstream, and its stream with it');
  const opened = upstream.stats().initializeCount;
  const again = await rpc(b.url, 'tools/list', {}, { caps });
  t.equal(again.status, 200);
  t.equal(upstream.stats().initializeCount, opened + 1, 'the next request opens another');
  await until(() => upstream.stats().getStreamsOpen === 1, { what: 'the GET stream' });
});
