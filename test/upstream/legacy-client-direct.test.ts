// Direct calls on the upstream client (the warm lane's WarmCall is one): post() counts a call until
// settled(), close() waits for the ones counted, a post while closing sends nothing, and destroy()
// ends each call in flight once. The server holds every POST until the test lets it answer.

import type { ServerResponse } from 'node:http';
import t from 'tap';
import { TargetSet } from '../../src/upstream/core/targets.js';
import { UpstreamHttp } from '../../src/upstream/http/compose/index.js';
import type { DirectCall, DirectTally } from '../../src/upstream/http/legacy-client.js';
import type { RequestResult } from '../../src/upstream/core/index.js';
import type { StreamHandlers } from '../../src/upstream/core/index.js';
import { rawClient, rawServer, SESSION, type HasTeardown } from './raw-server.js';

type Client = ReturnType<typeof rawClient>['client'];

/** A DirectCall that records what undici and the client tell it, and settles itself as WarmCall does. */
class Recorded implements DirectCall {
  readonly session = SESSION;
  readonly handlers: StreamHandlers = { onServerRequest: () => undefined };
  tally: DirectTally | undefined = undefined;
  status = 0;
  ended = 0;
  readonly done: Promise<void>;
  private finish!: () => void;

  constructor(
    private readonly client: Client,
    readonly method: string,
  ) {
    this.done = new Promise((resolve) => (this.finish = resolve));
  }

  onRequestStart(): void {}
  onResponseStart(_controller: unknown, status: number): void {
    this.status = status;
  }
  onResponseData(): void {}
  onResponseEnd(): void {
    this.settle('ok');
  }
  onResponseError(): void {
    this.settle('failed');
  }
  endLifetime(): void {
    this.ended += 1;
    this.settle('failed');
  }

  private settle(result: RequestResult): void {
    this.client.settled(this, this.method, result, 0.001);
    this.finish();
  }
}

function body(id: number, method: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params: { name: 'echo', arguments: {} } });
}

async function holdingServer(t: HasTeardown) {
  const held: ServerResponse[] = [];
  let arrived: () => void = () => undefined;
  const server = await rawServer(t, (_req, res) => {
    held.push(res);
    arrived();
  });
  /** Resolves once `n` POSTs are held. */
  const holding = (n: number) =>
    new Promise<void>((resolve) => {
      arrived = () => held.length >= n && resolve();
      arrived();
    });
  const answer = () => {
    for (const res of held.splice(0)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [] } }));
    }
  };
  return { server, holding, answer };
}

t.test('close() waits for a direct call until it is settled; a post while closing sends nothing', async (t) => {
  const { server, holding, answer } = await holdingServer(t);
  const recorded: RequestResult[] = [];
  // The composed client shared as the app builds it: the client's close() leaves it open, so only
  // the count of direct calls holds close() back.
  const targets = new TargetSet([server.url], { ejectAfterFailures: 1, ejectMs: 1000 });
  const http = new UpstreamHttp({ connectTimeoutMs: 500, requestTimeoutMs: 3000, upstream: { name: 'raw', targets } });
  t.teardown(() => http.destroy());
  const { client } = rawClient(t, server.url, { targets, http }, { onRequest: (_m, result) => recorded.push(result) });
  const call = new Recorded(client, 'tools/call');
  t.ok(client.post(call, 'tools/call', body(1, 'tools/call'), {}), 'sent');
  t.ok(call.tally?.ask, 'a tools/call is counted as a call that may take an ask');
  await holding(1);

  let closed = false;
  const closing = client.close().then(() => (closed = true));
  const late = new Recorded(client, 'tools/call');
  t.notOk(client.post(late, 'tools/call', body(2, 'tools/call'), {}), 'refused once closing');
  t.equal(late.tally, undefined, 'and not counted');
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(closed, 'close() is still waiting on the call in flight');

  answer();
  await call.done;
  await closing;
  t.equal(call.status, 200);
  t.equal(call.tally, undefined, 'settled: no longer counted');
  t.same(recorded, ['ok'], 'its request recorded once');
  t.equal(server.seen.length, 1, 'the refused call never reached the upstream');
});

t.test('destroy() ends each direct call in flight once; settling again changes nothing', async (t) => {
  const { server, holding } = await holdingServer(t);
  const recorded: RequestResult[] = [];
  const { client } = rawClient(t, server.url, {}, { onRequest: (_m, result) => recorded.push(result) });
  const calls = [new Recorded(client, 'tools/call'), new Recorded(client, 'tools/list')];
  for (const [i, c] of calls.entries()) t.ok(client.post(c, c.method, body(i + 1, c.method), {}));
  t.equal(calls[1]!.tally?.ask, undefined, 'a tools/list takes no asks');
  await holding(2);

  await client.destroy();
  await Promise.all(calls.map((c) => c.done));
  t.same(
    calls.map((c) => c.ended),
    [1, 1],
    'each call ended once',
  );
  t.same(
    calls.map((c) => c.tally),
    [undefined, undefined],
    'none counted any longer',
  );
  const before = recorded.length;
  client.settled(calls[0]!, 'tools/call', 'failed', 0.001);
  client.settled(new Recorded(client, 'tools/call'), 'tools/call', 'failed', 0.001);
  t.equal(recorded.length, before, 'settling a settled call, or one never posted, records nothing');
  t.equal(recorded.length, 2, 'the two calls recorded once each');
});
