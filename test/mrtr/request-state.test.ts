// StateSealer and paramsDigest [MRTR "requestState integrity"]: a sealed state opens only under a
// configured key, any change to it is refused, and the digest names the request, not its round.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { paramsDigest, StateSealer, type StateClaims } from '../../src/mrtr/request-state.js';
import { modernMeta } from '../e2e/wire.js';

const key = (): string => randomBytes(32).toString('base64');
const k1 = key();
const k2 = key();
const k3 = key();

// `as`: the claim set grows (e.g. h, the holding replica) without this test having to follow.
const claims = {
  p: 'principal-hash',
  m: 'tools/call',
  d: 'digest-abc',
  c: 'call-id-1',
  r: 1,
  h: 'replica-1',
  e: 1_900_000_000_000,
} as StateClaims;

t.test('seal then open gives the claims back', async (t) => {
  const s = new StateSealer([k1]);
  const state = s.seal(claims);
  t.type(state, 'string');
  t.match(state, /^[A-Za-z0-9_-]+$/, 'base64url, no padding');
  t.same(s.open(state), claims);
  t.not(s.seal(claims), state, 'a fresh IV each time');
  t.same(s.open(s.seal(claims)), claims);
  t.notMatch(state, /principal-hash|call-id-1|tools\/call/, 'claims are not readable in the clear');
  t.notMatch(Buffer.from(state, 'base64url').toString('latin1'), /principal-hash|call-id-1/, 'nor in the raw bytes');
});

t.test('key rotation: newest key seals, every configured key opens', async (t) => {
  const old = new StateSealer([k1]);
  const rotated = new StateSealer([k2, k1]);
  const underOld = old.seal(claims);
  t.same(rotated.open(underOld), claims, 'a state sealed under k1 still opens after k2 is added');
  const underNew = rotated.seal(claims);
  t.same(rotated.open(underNew), claims);
  t.same(new StateSealer([k2]).open(underNew), claims, 'sealed under the newest key (k2)');
  t.equal(old.open(underNew), undefined, 'not under k1');
  t.equal(new StateSealer([k3]).open(underOld), undefined, 'unknown key: refused');
  t.equal(new StateSealer([k3, k2]).open(underOld), undefined, 'k1 retired: refused');
});

t.test('no keys: a random key per instance', async (t) => {
  const a = new StateSealer([]);
  const b = new StateSealer([]);
  const state = a.seal(claims);
  t.same(a.open(state), claims);
  t.equal(b.open(state), undefined);
});

t.test('keys that are not 32 bytes are refused at construction', async (t) => {
  t.throws(() => new StateSealer([randomBytes(16).toString('base64')]), /32 bytes/);
  t.throws(() => new StateSealer([k1, randomBytes(33).toString('base64')]), /32 bytes/);
  t.throws(() => new StateSealer(['']), /32 bytes/);
});

t.test('tampering with any byte is refused', async (t) => {
  const s = new StateSealer([k1]);
  const state = s.seal(claims);
  const raw = Buffer.from(state, 'base64url');
  let refused = 0;
  for (let i = 0; i < raw.length; i++) {
    for (const mask of [0x01, 0x80]) {
      const bad = Buffer.from(raw);
      bad[i] = bad[i]! ^ mask;
      if (s.open(bad.toString('base64url')) === undefined) refused++;
      else t.fail(`byte ${i} ^ ${mask} was accepted`);
    }
  }
  t.equal(refused, raw.length * 2, `all ${raw.length * 2} single-bit flips refused`);
});

t.test('changing any character of the text is refused', async (t) => {
  const s = new StateSealer([k1]);
  const state = s.seal(claims);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let refused = 0;
  for (let i = 0; i < state.length; i++) {
    const c = state[i]!;
    // Next character in the alphabet (on the last char this may only touch padding bits).
    const other = alphabet[(alphabet.indexOf(c) + 1) % alphabet.length]!;
    const bad = state.slice(0, i) + other + state.slice(i + 1);
    if (s.open(bad) === undefined) refused++;
    else t.fail(`char ${i} ${c}->${other} was accepted`);
  }
  t.equal(refused, state.length);
  t.equal(s.open(state + 'A'), undefined, 'a character appended');
  t.equal(s.open('A' + state), undefined, 'a character prepended');
});

t.test('truncated, empty, non-base64url and foreign-version input is refused', async (t) => {
  const s = new StateSealer([k1]);
  const state = s.seal(claims);
  t.equal(s.open(''), undefined, 'empty');
  t.equal(s.open(state.slice(0, -1)), undefined, 'last char dropped');
  t.equal(s.open(state.slice(0, -4)), undefined, 'tag truncated');
  t.equal(s.open(state.slice(0, 20)), undefined, 'header only');
  t.equal(s.open(state.slice(1)), undefined, 'first char dropped');
  t.equal(s.open('A'), undefined);
  t.equal(s.open('not base64url!!'), undefined, 'foreign characters');
  t.equal(s.open(state.replace(/.$/, '=')), undefined, 'padding character');
  const asBase64 = Buffer.from(state, 'base64url').toString('base64');
  if (asBase64 !== state) t.equal(s.open(asBase64), undefined, 'standard base64 (+ / =) is not the sealed text');
  t.equal(s.open(`${state}\n`), undefined, 'trailing newline');
  t.equal(s.open(` ${state}`), undefined, 'leading space');
  const raw = Buffer.from(state, 'base64url');
  const v1 = Buffer.from(raw);
  v1[0] = 1;
  t.equal(s.open(v1.toString('base64url')), undefined, 'unknown format version byte');
  // Correctly sealed, but not JSON claims inside: still must not throw.
  t.doesNotThrow(() => s.open(randomBytes(64).toString('base64url')));
  t.equal(s.open(randomBytes(64).toString('base64url')), undefined, 'random bytes');
});

t.test('paramsDigest names the request, not its envelope or round', async (t) => {
  const base = { name: 'test_input_required_result_elicitation', arguments: { a: 1, b: [1, 2, { c: 'x' }] } };
  const d = paramsDigest(base);
  t.type(d, 'string');
  t.equal(d.length, 22);
  t.equal(
    paramsDigest({
      ...base,
      _meta: modernMeta({ progressToken: 7 }),
      inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } },
      requestState: 'abc',
    }),
    d,
    'ignores _meta, inputResponses and requestState',
  );
  t.equal(
    paramsDigest({ arguments: { b: [1, 2, { c: 'x' }], a: 1 }, name: base.name }),
    d,
    'ignores key order, nested too',
  );
  t.not(paramsDigest({ ...base, arguments: { a: 2, b: [1, 2, { c: 'x' }] } }), d, 'other arguments');
  t.not(paramsDigest({ ...base, arguments: { a: 1, b: [2, 1, { c: 'x' }] } }), d, 'array order matters');
  t.not(paramsDigest({ ...base, name: 'echo' }), d, 'other tool');
  t.not(paramsDigest({ ...base, task: { ttl: 1 } }), d, 'an extra param');
  t.equal(paramsDigest({}), paramsDigest({ _meta: {} }), 'empty params');
});

t.test('values sealed for a purpose open only for that purpose, and never as a requestState', async (t) => {
  const sealer = new StateSealer([k1]);
  const sealed = sealer.sealFor('grant a|p1', { a: 'token' });
  t.same(sealer.openFor('grant a|p1', sealed), { a: 'token' });
  t.equal(sealer.openFor('grant a|p2', sealed), undefined, 'copied under another key, it does not open');
  t.equal(sealer.open(sealed), undefined, 'not a requestState');
  t.equal(sealer.openFor('grant a|p1', sealer.seal(claims)), undefined, 'and a requestState is not one of them');
});
