// A legacy upstream restarted behind two replicas sharing Redis, under continuous calls of both
// eras. The restarted server no longer knows any session. The spec's answer is 404, but
// server-everything and the session-map example in the legacy SDK's README answer 400 -32000 "Bad
// Request: No valid session ID provided" (the fixture's --unknown-session-400 answers the same way),
// and before Causeway read that as a lost session every call failed until the pooled session
// idled out. For both answers:
// - no call sent once the server answers again fails. A modern call is sent again on a new
//   session by Causeway itself; a legacy client gets the 404 that tells it to initialize again,
//   and does so once, as the spec asks of it;
// - each replica opens at most one new session per principal (counted by its
//   causeway_upstream_initialize_total), and the restarted server sees one initialize per
//   principal from the modern face in all, not one per call or per replica.

import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { spawnCauseway, type RunningCauseway } from '../helpers/causeway.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { sseMessages } from '../helpers/sse.js';
import { until } from '../helpers/until.js';
import { modernBody, modernHeaders } from './wire.js';
import { spawnFixture, type FixtureProcess } from './upstreams.js';

const PRINCIPALS = ['alice', 'bob'] as const;
const LEGACY_VERSION = '2025-11-25';
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Outcome {
  era: 'modern' | 'legacy';
  who: string;
  replica: number;
  sentAt: number;
  ok: boolean;
  detail?: string;
}

/** The one JSON-RPC message of an answer, JSON or SSE. */
async function messageOf(
  res: Response,
): Promise<{ result?: { content?: Array<{ text?: string }> }; error?: { message?: string } }> {
  const text = await res.text();
  if (text.trimStart().startsWith('{')) return JSON.parse(text) as never;
  return (sseMessages(text).find((m: { id?: unknown }) => m.id !== undefined) ?? {}) as never;
}

const counted = (m: Awaited<ReturnType<typeof messageOf>>) => Number.isInteger(Number(m.result?.content?.[0]?.text));

/** A modern tools/call of the fixture's counter, for `who`, on `replica`. */
async function modernCall(replica: RunningCauseway, who: string, id: number): Promise<string | undefined> {
  const res = await fetch(replica.url, {
    method: 'POST',
    headers: { ...modernHeaders('tools/call', 'counter'), 'x-causeway-principal': who },
    body: JSON.stringify(modernBody('tools/call', { name: 'counter', arguments: {} }, id)),
  });
  const m = await messageOf(res);
  return res.status === 200 && counted(m) ? undefined : `HTTP ${res.status}: ${m.error?.message ?? 'no count'}`;
}

/** A legacy client as the spec has it: one session, opened again when a request on it gets 404. */
class LegacyClient {
  private sessionId: string | undefined;
  private id = 0;
  reinitialized = 0;

  constructor(private readonly who: string) {}

  private headers(): Record<string, string> {
    return {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'x-causeway-principal': this.who,
      ...(this.sessionId === undefined
        ? {}
        : { 'mcp-session-id': this.sessionId, 'mcp-protocol-version': LEGACY_VERSION }),
    };
  }

  private async open(url: string): Promise<void> {
    this.sessionId = undefined;
    const params = {
      protocolVersion: LEGACY_VERSION,
      capabilities: {},
      clientInfo: { name: 'restart-test', version: '1' },
    };
    const res = await fetch(url, {
      method: 'POST',
      headers: this.headers(),
      body: JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method: 'initialize', params }),
    });
    const m = await messageOf(res);
    const sid = res.headers.get('mcp-session-id');
    if (res.status !== 200 || m.result === undefined || sid === null) throw new Error(`initialize: HTTP ${res.status}`);
    this.sessionId = sid;
    const note = await fetch(url, {
      method: 'POST',
      headers: this.headers(),
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    await note.arrayBuffer();
  }

  /** A counter call on `url`; undefined when it was answered with a count, else what went wrong. */
  async call(url: string): Promise<string | undefined> {
    if (this.sessionId === undefined) await this.open(url);
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(url, {
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: ++this.id,
          method: 'tools/call',
          params: { name: 'counter', arguments: {} },
        }),
      });
      if (res.status === 404 && attempt === 0) {
        await res.arrayBuffer();
        this.reinitialized += 1;
        await this.open(url);
        continue;
      }
      const m = await messageOf(res);
      return res.status === 200 && counted(m) ? undefined : `HTTP ${res.status}: ${m.error?.message ?? 'no count'}`;
    }
  }
}

/** Every counter of causeway_upstream_initialize_total on a replica, by reason. */
async function initializations(replica: RunningCauseway): Promise<Record<string, number>> {
  const text = await (await fetch(`${replica.adminUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^causeway_upstream_initialize_total\{[^}]*reason="([a-z]+)"[^}]*\} (\d+)/gm)) {
    out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
  }
  return out;
}

async function restartUnderLoad(t: Test, unknownSession: 400 | 404): Promise<void> {
  const redis = await startRedis(t);
  const port = await freePort();
  const args = unknownSession === 400 ? ['--unknown-session-400'] : [];
  let fixture: FixtureProcess = await spawnFixture(port, { t, args });
  const settings = {
    'upstream.url': `http://127.0.0.1:${port}/mcp`,
    'store.kind': 'redis',
    'store.redisUrl': redis.url,
    'mrtr.stateKeys': randomBytes(32).toString('base64'),
    'principal.mode': 'header',
    'principal.hashSecret': 'restart-test-hash-secret-0123456789',
  };
  const replicas = await Promise.all([spawnCauseway(settings, { t }), spawnCauseway(settings, { t })]);
  const legacy = new Map(PRINCIPALS.map((who) => [who, new LegacyClient(who)]));

  const outcomes: Outcome[] = [];
  let stopped = false;
  let id = 0;
  const worker = async (era: Outcome['era'], who: string) => {
    for (let n = 0; !stopped; n++) {
      const replica = n % replicas.length;
      const sentAt = Date.now();
      let detail: string | undefined;
      try {
        detail =
          era === 'modern'
            ? await modernCall(replicas[replica]!, who, ++id)
            : await legacy.get(who as 'alice')!.call(replicas[replica]!.url);
      } catch (err) {
        detail = (err as Error).message;
      }
      outcomes.push({
        era,
        who,
        replica,
        sentAt,
        ok: detail === undefined,
        ...(detail === undefined ? {} : { detail }),
      });
      // Calls that fail at once while the server is down would otherwise spin.
      if (detail !== undefined) await pause(5);
    }
  };
  const load = Promise.all(PRINCIPALS.flatMap((who) => [worker('modern', who), worker('legacy', who)]));
  try {
    const served = (since: number) => (o: Outcome) => o.ok && o.sentAt >= since;
    await until(() => outcomes.filter(served(0)).length >= 40, {
      what: 'calls of both eras served before the restart',
    });
    t.same(
      outcomes.filter((o) => !o.ok),
      [],
      'every call before the restart was served',
    );
    const before = await Promise.all(replicas.map(initializations));

    await fixture.kill();
    const killedAt = Date.now();
    await until(() => outcomes.some((o) => o.sentAt >= killedAt && !o.ok), {
      what: 'a call failing while the server is down',
    });
    fixture = await spawnFixture(port, { t, args });
    const restartedAt = Date.now();

    // Every era, principal and replica is served a few times by the new process (or calls after the
    // restart go on failing, and the assertions below say how).
    const failedSince = () => outcomes.filter((o) => o.sentAt >= restartedAt && !o.ok).length;
    await until(
      () =>
        failedSince() >= 20 ||
        PRINCIPALS.every((who) =>
          (['modern', 'legacy'] as const).every((era) =>
            replicas.every(
              (_, r) =>
                outcomes.filter((o) => served(restartedAt)(o) && o.era === era && o.who === who && o.replica === r)
                  .length >= 5,
            ),
          ),
        ),
      { what: 'calls of both eras served on both replicas after the restart' },
    );
    stopped = true;
    await load;

    const after = outcomes.filter((o) => o.sentAt >= restartedAt);
    t.same(
      after.filter((o) => !o.ok),
      [],
      `0 of ${after.length} calls sent after the server answered again failed`,
    );
    const stats = await fixture.stats();
    const legacyOpened = [...legacy.values()].reduce((n, c) => n + c.reinitialized, 0);
    t.equal(legacyOpened, PRINCIPALS.length, 'each legacy client was told once to initialize again');
    t.equal(
      stats.initializeCount,
      PRINCIPALS.length + legacyOpened,
      'the new server saw one initialize per principal and era',
    );
    const opened = (await Promise.all(replicas.map(initializations))).map((now, r) =>
      Object.entries(now).reduce((n, [reason, v]) => (reason === 'new' ? n : n + v - (before[r]![reason] ?? 0)), 0),
    );
    for (const [r, n] of opened.entries())
      t.ok(n <= PRINCIPALS.length, `replica ${r} opened ${n} new sessions for ${PRINCIPALS.length} principals`);
    t.equal(opened[0]! + opened[1]!, PRINCIPALS.length, 'one new modern session per principal across the replicas');
    // Down, then forgotten: one line per lost session, not one per call or per try while it was down.
    const lost = replicas.map((r) => r.logs.filter((l) => l.includes('upstream session lost')).length);
    t.ok(
      lost.every((n) => n <= PRINCIPALS.length),
      `the lost session was logged once per session on each replica (${lost.join(', ')})`,
    );
  } finally {
    stopped = true;
    await load;
  }
}

t.test('restarted upstream answering an unknown session with 400 -32000, as server-everything does', (t) =>
  restartUnderLoad(t, 400),
);
t.test('restarted upstream answering an unknown session with 404, as the spec asks', (t) => restartUnderLoad(t, 404));
