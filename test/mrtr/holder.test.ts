// PendingCall (one held legacy call: its asks, answers and rounds) and HeldCalls (the replica's
// bounded set of them), without sockets.

import t from 'tap';
import { HeldCalls, PendingCall } from '../../src/mrtr/holder.js';
import { INPUT_KEY_META } from '../../src/mrtr/asks.js';
import type { JsonObject, JsonRpcRequest } from '../../src/jsonrpc.js';
import { until } from '../helpers/until.js';

const elicit = (id: number, key?: string, message = 'What is your name?'): JsonRpcRequest => ({
  jsonrpc: '2.0',
  id,
  method: 'elicitation/create',
  params: {
    message,
    requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
    ...(key === undefined ? {} : { _meta: { [INPUT_KEY_META]: key } }),
  },
});
const roots = (id: number, key: string): JsonRpcRequest => ({
  jsonrpc: '2.0',
  id,
  method: 'roots/list',
  params: { _meta: { [INPUT_KEY_META]: key } },
});
const accept = (name: string): JsonObject => ({ action: 'accept', content: { name } });

function newCall(principal = 'p'): { call: PendingCall; sent: Array<[string | number, JsonObject]> } {
  const sent: Array<[string | number, JsonObject]> = [];
  const call = new PendingCall(
    principal,
    'tools/call',
    () => 'digest',
    (id, r) => sent.push([id, r]),
  );
  return { call, sent };
}

const never = new AbortController().signal;
/** A round timeout no test reaches. */
const LONG = 60_000;

t.test('an ask becomes a round after the collect window; concurrent asks share it', async (t) => {
  const { call } = newCall();
  const next = call.next(30, LONG, never);
  const t0 = Date.now();
  call.ask(elicit(1, 'user_name'));
  // The second ask in the same tick: a pause of the machine longer than the window (seen under
  // load) could otherwise close the round between the two.
  call.ask(roots(2, 'client_roots'));
  const out = await next;
  t.ok(Date.now() - t0 >= 25, 'waited for the window');
  t.equal(out.kind, 'input');
  if (out.kind === 'input') t.same(out.asks.map((a) => a.key).sort(), ['client_roots', 'user_name']);
});

t.test('answers: valid ones go upstream by key, invalid and unknown ones do not', async (t) => {
  const { call, sent } = newCall();
  call.ask(elicit(7, 'user_name'));
  call.ask(roots(8, 'client_roots'));
  call.answer({ user_name: { action: 'maybe' }, client_roots: { roots: [{ uri: 'file:///a' }] }, bogus: accept('x') });
  t.same(sent, [[8, { roots: [{ uri: 'file:///a' }] }]], 'only the well-formed answer to an outstanding ask');
  const out = await call.next(0, LONG, never);
  t.equal(out.kind, 'input');
  if (out.kind === 'input')
    t.same(
      out.asks.map((a) => a.key),
      ['user_name'],
      'the ill-formed one is asked again',
    );
  call.answer({ user_name: accept('Ada') });
  t.same(sent[1], [7, accept('Ada')]);
  call.answer({ user_name: accept('Again') });
  t.equal(sent.length, 2, 'an ask is answered upstream once');
});

t.test('answers given before the ask answer it when it comes', async (t) => {
  const { call, sent } = newCall();
  call.answer({ user_name: accept('Early') });
  call.ask(elicit(3, 'user_name'));
  t.same(sent, [[3, accept('Early')]]);
  call.ask(elicit(4, 'other'));
  t.equal(sent.length, 1, 'an ask without an answer waits');
  call.settle({ jsonrpc: '2.0', id: 'x', result: { content: [] } });
  const out = await call.next(1000, LONG, never);
  t.equal(out.kind, 'done', 'the upstream answer wins over outstanding asks');
});

t.test('an ill-formed early answer is not used', async (t) => {
  const { call, sent } = newCall();
  call.answer({ user_name: { action: 'accept', content: 'Ada' } });
  call.ask(elicit(3, 'user_name'));
  t.same(sent, []);
});

t.test('next() ends with the upstream outcome, a refusal, or the abort', async (t) => {
  const a = newCall().call;
  const pa = a.next(10, LONG, never);
  a.fail(new Error('boom'));
  const oa = await pa;
  t.equal(oa.kind, 'failed');

  const b = newCall().call;
  const ac = new AbortController();
  const pb = b.next(10, LONG, ac.signal);
  ac.abort(new Error('client left'));
  const ob = await pb;
  t.equal(ob.kind, 'failed');
  if (ob.kind === 'failed') t.match(String(ob.error), /client left/);
});

t.test('next() ends with timeout when the upstream neither answers nor asks in time', async (t) => {
  const { call } = newCall();
  t.same(await call.next(10, 20, never), { kind: 'timeout' });
  const asked = newCall().call;
  asked.ask(elicit(1, 'user_name'));
  const out = await asked.next(10, 20, never);
  t.equal(out.kind, 'input', 'an ask in time is a round, not a timeout');
});

t.test('expireAfter cancels the call and tells the owner; stopTimer prevents it', async (t) => {
  const { call } = newCall();
  let cancelled = 0;
  let expired = 0;
  call.cancel = () => cancelled++;
  call.expireAfter(20, () => expired++);
  await until(() => expired > 0, { what: 'the call to expire' });
  t.same([cancelled, expired], [1, 1]);
  const other = newCall().call;
  other.cancel = () => cancelled++;
  other.expireAfter(20, () => expired++);
  other.stopTimer();
  await new Promise((r) => setTimeout(r, 50)); // negative check: the 20 ms timer, had it run, is due before this one
  t.same([cancelled, expired], [1, 1], 'stopped in time');
});

t.test('HeldCalls: per-principal and total bounds, release frees the slot', async (t) => {
  const held = new HeldCalls({ maxPending: 3, maxPendingPerPrincipal: 2 });
  const a1 = newCall('a').call;
  const a2 = newCall('a').call;
  t.ok(held.hasRoom('a'));
  held.hold(a1);
  held.hold(a1);
  t.equal(held.size, 1, 'hold is idempotent');
  held.hold(a2);
  t.notOk(held.hasRoom('a'), 'a is at its limit');
  t.ok(held.hasRoom('b'));
  held.hold(newCall('b').call);
  t.notOk(held.hasRoom('c'), 'the replica is full');
  t.equal(held.get(a1.id), a1);
  held.release(a1);
  t.ok(held.hasRoom('a'));
  t.equal(held.get(a1.id), undefined);
  held.release(a1);
  held.release(a1);
  held.hold(newCall('a').call);
  t.notOk(held.hasRoom('a'), 'releasing twice did not free two slots');
});

t.test('HeldCalls: a released call is remembered until its state expires', async (t) => {
  const held = new HeldCalls({ maxPending: 10, maxPendingPerPrincipal: 10 });
  const c = newCall().call;
  c.round = 1;
  held.hold(c);
  held.release(c, Date.now() + 40);
  t.ok(held.wasFinished(c.id));
  await new Promise((r) => setTimeout(r, 60)); // lower bound: past the expiry, read off the clock
  t.notOk(held.wasFinished(c.id), 'forgotten once its state expired');
  const d = newCall().call;
  d.round = 1;
  held.hold(d);
  held.release(d);
  t.notOk(held.wasFinished(d.id), 'no expiry given: not remembered');
});

t.test('HeldCalls: cancelAll cancels and releases every held call', async (t) => {
  const held = new HeldCalls({ maxPending: 10, maxPendingPerPrincipal: 10 });
  let cancelled = 0;
  for (let i = 0; i < 3; i++) {
    const c = newCall(`p${i}`).call;
    c.cancel = () => cancelled++;
    held.hold(c);
  }
  held.cancelAll();
  t.equal(cancelled, 3);
  t.equal(held.size, 0);
  t.ok(held.hasRoom('p0'));
});

/** A Map that counts how many entries its iterators hand out. */
class CountingMap<K, V> extends Map<K, V> {
  visited = 0;
  override *[Symbol.iterator](): MapIterator<[K, V]> {
    for (const e of super.entries()) {
      this.visited++;
      yield e;
    }
  }
  override *entries(): MapIterator<[K, V]> {
    yield* this[Symbol.iterator]();
  }
}

t.test('HeldCalls: a call that never handed out a state leaves no replay record', async (t) => {
  const held = new HeldCalls({ maxPending: 10, maxPendingPerPrincipal: 10 });
  const c = newCall().call;
  held.release(c, Date.now() + 300_000);
  t.notOk(held.wasFinished(c.id), 'round 0: no state names this call');
});

t.test('HeldCalls: release stays cheap beyond 4 x maxPending remembered calls', async (t) => {
  const held = new HeldCalls({ maxPending: 10, maxPendingPerPrincipal: 10 });
  const finished = new CountingMap<string, number>();
  (held as unknown as { finished: Map<string, number> }).finished = finished;
  const N = 2000;
  for (let i = 0; i < N; i++) {
    const c = newCall().call;
    c.round = 1;
    held.hold(c);
    held.release(c, Date.now() + 300_000);
  }
  t.ok(
    finished.visited <= 4 * N,
    `entries visited by ${N} releases: ${finished.visited} (amortised O(1) would be <= ${4 * N})`,
  );
});

t.test(
  'resumePoint: resume after the event before the first outstanding ask, skip to the last event read',
  async (t) => {
    const { call } = newCall();
    t.equal(call.resumePoint(), undefined, 'nothing to resume before the call is known upstream');
    call.upstream = { id: 'cw-x-1', token: 'cw-x-p2', session: 'digest-of-session' };
    call.event('e1'); // priming
    call.event('e2');
    call.ask(elicit(7, 'first'));
    call.answer({ first: accept('Ann') });
    call.event('e3');
    call.ask(elicit(8, 'second', 'Second?'));
    call.event('e4');
    call.ask(roots(9, 'roots'));
    call.event('e5'); // a progress notification, say
    t.same(call.resumePoint(), { s: 'digest-of-session', i: 'cw-x-1', k: 'cw-x-p2', l: 'e2', t: 'e5', q: [8, 9] });
    call.answer({ second: accept('red') });
    t.same(call.resumePoint()?.l, 'e3', 'the first ask still outstanding decides where to resume');
    call.event(undefined);
    t.equal(call.resumePoint(), undefined, 'an event without an id: its place on the stream cannot be named');
  },
);

t.test('detachAll lets held calls go without cancelling them; cancelAll cancels', async (t) => {
  const held = new HeldCalls({ maxPending: 10, maxPendingPerPrincipal: 10 });
  const a = newCall().call;
  const b = newCall().call;
  const seen: string[] = [];
  a.cancel = () => seen.push('cancel a');
  a.detach = () => seen.push('detach a');
  b.cancel = () => seen.push('cancel b');
  b.detach = () => seen.push('detach b');
  held.hold(a);
  held.detachAll();
  held.hold(b);
  held.cancelAll();
  t.same(seen, ['detach a', 'cancel b']);
  t.equal(held.size, 0);
});

t.test('a call held as a task: progress ends the wait, and its questions go to the task from then on', async (t) => {
  const { call, sent } = newCall();
  call.asTask = { firstAskMs: LONG, asksInTask: false, ttlMs: LONG, handover: async () => ({}) };
  const next = call.next(0, LONG, never);
  call.ask(elicit(1, 'early'));
  call.working();
  t.equal((await next).kind, 'working', 'progress: the call works, whatever it asked before');
  const diverted: JsonRpcRequest[] = [];
  call.divert((r) => diverted.push(r));
  t.same(
    diverted.map((r) => r.id),
    [1],
    'the question still outstanding goes first',
  );
  call.ask(elicit(2, 'later'));
  t.same(
    diverted.map((r) => r.id),
    [1, 2],
    'and each later one',
  );
  call.answer({ early: accept('x') });
  t.same(sent, [], 'answers for diverted questions are the task’s to send, not the round’s');
});

t.test('progress does not end a round of a call that is not held as a task', async (t) => {
  const { call } = newCall();
  call.working();
  call.ask(elicit(1, 'user_name'));
  t.equal((await call.next(0, LONG, never)).kind, 'input');
});

t.test('a call held as a task: its answer, or its failure, once over', async (t) => {
  const done = newCall().call;
  done.settle({ jsonrpc: '2.0', id: 1, result: { content: [] } });
  t.same(await done.response(), { jsonrpc: '2.0', id: 1, result: { content: [] } });
  const failed = newCall().call;
  failed.fail(new Error('cut off'));
  await t.rejects(failed.response(), /cut off/);
});
