// What a server/discover answer says of an upstream's era, and how UpstreamEra keeps it: a
// DiscoverResult or a 2026 -32022 is modern, a 400/404/405 with no 2026 answer legacy; 401, 403,
// 429, 5xx and network errors say nothing (the last known era is served, the probe tried again);
// the era found is stored for the other replicas, and found again when refused.

import t from 'tap';
import { eraOf, MemoryEraMemo, UpstreamEra, type ProbeAnswer } from '../../src/upstream/index.js';
import { createLogger } from '../../src/log.js';
import { CausewayError, refusedInitialize } from '../../src/errors.js';

const log = createLogger('silent');
const discover = {
  jsonrpc: '2.0',
  id: 1,
  result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: {} },
};
const unsupported = (supported: string[]) => ({
  jsonrpc: '2.0',
  id: 1,
  error: { code: -32022, message: 'Unsupported protocol version', data: { supported } },
});

t.test('eraOf reads a probe answer as a dual-era client would', async (t) => {
  t.equal(eraOf({ status: 200, message: discover }), 'modern', 'a DiscoverResult');
  t.equal(eraOf({ status: 400, message: unsupported(['2026-07-28']) }), 'modern', 'a -32022 naming 2026-07-28');
  t.equal(
    eraOf({ status: 400, message: unsupported(['2025-11-25']) }),
    'legacy',
    'a -32022 naming only legacy versions',
  );
  t.equal(
    eraOf({
      status: 400,
      message: { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: Server not initialized' } },
    }),
    'legacy',
  );
  t.equal(eraOf({ status: 404, message: undefined }), 'legacy');
  t.equal(eraOf({ status: 405, message: undefined }), 'legacy');
  for (const status of [401, 403, 429, 500, 502, 503])
    t.equal(eraOf({ status, message: undefined }), undefined, `${status} says nothing`);
});

t.test(
  'UpstreamEra probes once, shares the era through the store, serves the last known one when a probe says nothing',
  async (t) => {
    const memo = new MemoryEraMemo();
    const answers: Array<ProbeAnswer | Error> = [
      { status: 503, message: undefined },
      { status: 200, message: discover },
    ];
    let probes = 0;
    const probe = async (): Promise<ProbeAnswer> => {
      probes++;
      const a = answers.shift()!;
      if (a instanceof Error) throw a;
      return a;
    };
    const found: string[] = [];
    const era = new UpstreamEra({
      upstream: 'u',
      setting: 'auto',
      probe,
      memo,
      log,
      retryMs: 0,
      onEra: (e) => found.push(e),
    });
    t.equal(await era.era(), 'legacy', 'no evidence yet: served as legacy');
    t.equal(era.current, undefined, 'and not remembered');
    const [a, b] = await Promise.all([era.era(), era.era()]);
    t.same([a, b], ['modern', 'modern'], 'found');
    t.equal(probes, 2, 'concurrent callers shared one probe');
    t.equal(await memo.get('u'), 'modern', 'stored for the other replicas');
    const other = new UpstreamEra({ upstream: 'u', setting: 'auto', probe, memo, log });
    t.equal(await other.era(), 'modern', 'another replica takes the stored era');
    t.equal(probes, 2, 'without probing');

    answers.push(new Error('connect ECONNREFUSED'));
    t.ok(era.refused(), 'a refusal forgets the era');
    t.equal(await era.era(), 'modern', 'a probe that fails serves the last known era');
    answers.push({ status: 400, message: undefined });
    t.equal(await era.era(), 'legacy', 'the next probe finds the new era, not the stored one');
    t.equal(await memo.get('u'), 'legacy', 'and stores it');
    t.same(found, ['modern', 'legacy']);
  },
);

t.test('a configured era is never probed or refused', async (t) => {
  let probes = 0;
  const era = new UpstreamEra({
    upstream: 'u',
    setting: 'modern',
    probe: async () => (probes++, { status: 200, message: discover }),
    memo: new MemoryEraMemo(),
    log,
  });
  t.equal(await era.era(), 'modern');
  t.notOk(era.refused());
  t.equal(probes, 0);
});

t.test('each URL is asked in turn until one shows an era; none showing one is tried again later', async (t) => {
  const asked: Array<string | undefined> = [];
  const answers: Record<string, ProbeAnswer | Error> = {
    a: new Error('connect ECONNREFUSED'),
    b: { status: 503, message: undefined },
    c: { status: 200, message: discover },
  };
  const probe = async (_signal: AbortSignal, target?: string): Promise<ProbeAnswer> => {
    asked.push(target);
    const a = answers[target!]!;
    if (a instanceof Error) throw a;
    return a;
  };
  const targets = ['a', 'b', 'c'];
  const era = new UpstreamEra({ upstream: 'u', setting: 'auto', probe, targets, memo: new MemoryEraMemo(), log });
  t.equal(await era.era(), 'modern', 'the third URL showed it');
  t.same(asked, ['a', 'b', 'c'], 'after the two that said nothing');

  asked.length = 0;
  answers.c = { status: 502, message: undefined };
  const none = new UpstreamEra({ upstream: 'v', setting: 'auto', probe, targets, memo: new MemoryEraMemo(), log });
  t.equal(await none.era(), 'legacy', 'no URL showed one: served as legacy');
  t.same(asked, ['a', 'b', 'c'], 'every URL was asked once');
  t.equal(none.current, undefined, 'and nothing remembered');
});

t.test("a refused legacy initialize naming 2026-07-28 is the era's answer; a refused call is probed", async (t) => {
  let probes = 0;
  const memo = new MemoryEraMemo();
  // Each probe hears nothing of 2026 (as from a child too slow to answer).
  const probed = (upstream: string) =>
    new UpstreamEra({
      upstream,
      setting: 'auto',
      probe: async () => (probes++, { status: 404, message: undefined }),
      memo,
      log,
    });
  const era = probed('u');
  t.equal(await era.era(), 'legacy', 'the probe heard nothing of 2026');
  t.equal(probes, 1);
  const refusalOf = (supported: string[]) => unsupported(supported).error;
  t.ok(era.refused(refusedInitialize('u', '2025-11-25', refusalOf(['2026-07-28']))));
  t.equal(era.current, 'modern', 'modern at once');
  t.equal(era.source, 'refusal');
  t.equal(await memo.get('u'), 'modern', 'stored for the other replicas');
  t.equal(probes, 1, 'without a probe');

  const again = probed('v');
  await again.era();
  const onlyLegacy = refusedInitialize('v', '2025-11-25', refusalOf(['2025-06-18']));
  t.ok(again.refused(onlyLegacy), 'a refusal naming only legacy versions');
  t.equal(again.current, undefined, 'is found again by a probe');
  const call = new CausewayError('unsupported_protocol_version', 'refused', undefined, {
    cause: refusalOf(['2026-07-28']),
  });
  await again.era();
  t.ok(again.refused(call), "a call's refusal, though it names 2026-07-28");
  t.equal(again.current, undefined, 'is found again by a probe too');
});
