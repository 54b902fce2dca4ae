// The status page's counts and their sum across replicas: traffic by revision, upstream and era
// over the last minute and since start; clients cut to the 50 busiest with the rest as `_other`,
// bounded per replica; parts summed by key, URLs at their worst health; the page escapes what
// clients name themselves and shows no URL's credentials or query.

import t from 'tap';
import { OTHER, renderPage, statusView, TOP_CLIENTS, Traffic, type ReplicaPart } from '../../src/status/index.js';
import { shownUrl } from '../../src/status/part.js';

t.test('traffic: since start and over the last minute, by revision, upstream and era', async (t) => {
  let now = 1_000_000;
  const traffic = new Traffic(
    (u) => (u === 'old' ? 'legacy' : 'modern'),
    () => now,
  );
  traffic.record('2025-11-25', 'old', { name: 'a', version: '1' });
  traffic.record('2025-11-25', 'old', undefined);
  now += 61_000;
  traffic.record('2025-11-25', 'old', undefined);
  traffic.record('2026-07-28', 'new', { name: 'b', version: '2' });
  t.same(
    traffic.rows().sort((x, y) => x.upstream.localeCompare(y.upstream)),
    [
      { clientRevision: '2026-07-28', upstream: 'new', upstreamEra: 'modern', lastMinute: 1, requests: 1 },
      { clientRevision: '2025-11-25', upstream: 'old', upstreamEra: 'legacy', lastMinute: 1, requests: 3 },
    ],
  );
  t.same(traffic.clientRows(), [
    { name: 'a', version: '1', revision: '2025-11-25', requests: 1 },
    { name: 'b', version: '2', revision: '2026-07-28', requests: 1 },
  ]);
});

t.test(`clients: the ${TOP_CLIENTS} busiest by name, the rest as ${OTHER} by revision; rows bounded`, async (t) => {
  const traffic = new Traffic(() => 'legacy');
  for (let i = 0; i < 1200; i++) {
    for (let n = 0; n <= (i < 60 ? 100 - i : 0); n++)
      traffic.record('2025-11-25', 'u', { name: `c${i}`, version: '1' });
  }
  const rows = traffic.clientRows();
  t.equal(rows.length, TOP_CLIENTS + 1);
  t.same(rows[0], { name: 'c0', version: '1', revision: '2025-11-25', requests: 101 });
  // c50..c59 (51 down to 42 requests: 465), c60..c999 (one each: 940), and c1000 on, past the 1000 rows kept (200).
  t.same(rows.at(-1), { name: OTHER, version: OTHER, revision: '2025-11-25', requests: 465 + 940 + 200 });
});

function part(id: string, requests: number, state: 'up' | 'ejected', era = 'legacy'): ReplicaPart {
  const zero = { inFlight: 0, pooledSessions: 1, standingStreams: 0, heldCalls: 0, listens: 0, tasks: 0 };
  return {
    at: 0,
    replica: {
      id,
      version: '0',
      config: '0123456789ab',
      started: '2026-01-01T00:00:00.000Z',
      draining: false,
      ...zero,
      cache: { hits: 1, misses: 2, bytes: 3 },
    },
    upstreams: [
      {
        name: 'u',
        era,
        eraFound: era === 'unknown' ? 'not yet' : 'probe',
        transport: 'streamable-http',
        urls: [{ url: 'http://x/mcp', state, ejectedOn: state === 'ejected' ? 1 : 0 }],
        pooledSessions: 1,
      },
    ],
    traffic: [{ clientRevision: '2025-11-25', upstream: 'u', upstreamEra: 'legacy', lastMinute: requests, requests }],
    clients: [{ name: '<b>x</b>', version: '1', revision: '2025-11-25', requests }],
    skills: [],
  };
}

t.test('the view sums the replicas: traffic and clients by key, URLs at their worst', async (t) => {
  const v = statusView(part('a', 2, 'up', 'unknown'), [part('b', 3, 'ejected')], 'redis');
  t.same(
    v.replicas.map((r) => [r.id, r.self]),
    [
      ['a', true],
      ['b', false],
    ],
  );
  t.match(v.upstreams, [{ name: 'u', era: 'legacy', eraFound: 'probe', pooledSessions: 2 }]);
  t.same(v.upstreams[0]!.urls, [{ url: 'http://x/mcp', state: 'ejected', ejectedOn: 1 }]);
  t.same(v.traffic, [
    { clientRevision: '2025-11-25', upstream: 'u', upstreamEra: 'legacy', lastMinute: 5, requests: 5 },
  ]);
  t.same(v.clients, [{ name: '<b>x</b>', version: '1', revision: '2025-11-25', requests: 5 }]);
  t.same(v.totals.cache, { hits: 2, misses: 4, bytes: 6 });
  const html = renderPage(v);
  t.ok(html.includes('&#60;b&#62;x&#60;/b&#62;'), 'a client name is escaped');
  t.notOk(html.includes('<b>x</b>'));
});

t.test('a URL is shown without credentials, query or fragment', async (t) => {
  t.equal(shownUrl('https://user:pw@host:8443/mcp?key=secret#f'), 'https://host:8443/mcp');
  t.equal(shownUrl('not a url'), '(unreadable URL)');
});
