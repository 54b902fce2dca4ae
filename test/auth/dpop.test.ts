// DPoP proof checks (RFC 9449 §4.3) one by one, with real keys and signatures: what a proof
// must be to pass, and the reason each kind of bad one is refused for.

import t from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { DpopVerifier, normalizeHtu } from '../../src/auth/dpop.js';
import { MemoryReplayCache } from '../../src/auth/replay-cache.js';

const URL_ = 'https://mcp.example.com/mcp';
const TOKEN = 'an-access-token';
const ath = createHash('sha256').update(TOKEN).digest('base64url');

const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
const jwk = await exportJWK(publicKey);
const jkt = await calculateJwkThumbprint(jwk, 'sha256');

function verifier(): DpopVerifier {
  return new DpopVerifier({
    algorithms: ['ES256', 'RS256'],
    clockSkewMs: 30_000,
    windowMs: 300_000,
    replays: new MemoryReplayCache(),
  });
}

async function proof(
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  key: Parameters<SignJWT['sign']>[0] = privateKey,
): Promise<string> {
  return new SignJWT({ htm: 'POST', htu: URL_, jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ath, ...claims })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: jwk as JWK, ...header })
    .sign(key);
}

const check = (
  v: DpopVerifier,
  p: string | undefined,
  over: Partial<{ method: string; url: string; token: string; jkt: string }> = {},
) => v.check({ proof: p, method: 'POST', url: URL_, token: TOKEN, jkt, ...over });

t.test('a good proof passes once; its jti is refused after', async (t) => {
  const v = verifier();
  const p = await proof();
  t.equal(await check(v, p), undefined);
  t.equal(await check(v, p), 'dpop_replayed');
});

t.test('htu is compared without query or fragment, scheme and host normalized', async (t) => {
  const v = verifier();
  t.equal(await check(v, await proof({ htu: 'HTTPS://MCP.example.com/mcp?x=1#f' })), undefined);
  t.equal(await check(v, await proof({ htu: 'https://mcp.example.com/other' })), 'dpop_wrong_target');
  t.equal(normalizeHtu('not a url'), undefined);
});

t.test('each bad proof is refused for its reason', async (t) => {
  const v = verifier();
  const priv = await exportJWK(privateKey);
  const { privateKey: es384 } = await generateKeyPair('ES384');
  const now = Math.floor(Date.now() / 1000);
  const cases: Array<[string, string | undefined, string]> = [
    ['no proof', undefined, 'dpop_invalid_proof'],
    ['not a JWS', 'a.b', 'dpop_invalid_proof'],
    ['typ JWT', await proof({}, { typ: 'JWT' }), 'dpop_invalid_proof'],
    ['a private key in the header', await proof({}, { jwk: priv }), 'dpop_invalid_proof'],
    [
      'an alg not allowed',
      await new SignJWT({ htm: 'POST', htu: URL_, jti: 'j', iat: now, ath })
        .setProtectedHeader({
          alg: 'ES384',
          typ: 'dpop+jwt',
          jwk: await exportJWK((await generateKeyPair('ES384')).publicKey),
        })
        .sign(es384),
      'dpop_invalid_proof',
    ],
    [
      'signed by a key other than the embedded one',
      await proof({}, {}, (await generateKeyPair('ES256')).privateKey),
      'dpop_invalid_proof',
    ],
    ['no jti', await proof({ jti: undefined }), 'dpop_invalid_proof'],
    ['another method', await proof({ htm: 'GET' }), 'dpop_wrong_target'],
    ['iat ahead of the skew', await proof({ iat: now + 120 }), 'dpop_stale'],
    ['iat before the window', await proof({ iat: now - 400 }), 'dpop_stale'],
    ['no ath', await proof({ ath: undefined }), 'dpop_wrong_token'],
  ];
  for (const [what, p, reason] of cases) t.equal(await check(v, p), reason, what);
  t.equal(
    await check(v, await proof(), { jkt: 'another-thumbprint' }),
    'dpop_key_mismatch',
    'a key other than cnf.jkt',
  );
});

t.test('a symmetric key cannot sign a proof', async (t) => {
  const secret = new Uint8Array(32).fill(7);
  const p = await new SignJWT({ htm: 'POST', htu: URL_, jti: 'j', iat: Math.floor(Date.now() / 1000), ath })
    // The header type has no room for a secret key: it is made here on purpose.
    .setProtectedHeader({
      alg: 'HS256',
      typ: 'dpop+jwt',
      jwk: { kty: 'oct', k: Buffer.from(secret).toString('base64url') } as unknown as JWK,
    })
    .sign(secret);
  const v = new DpopVerifier({
    algorithms: ['ES256', 'HS256'],
    clockSkewMs: 30_000,
    windowMs: 300_000,
    replays: new MemoryReplayCache(),
  });
  t.equal(await check(v, p), 'dpop_invalid_proof');
});

t.test('the memory replay cache forgets an id once its time is up', async (t) => {
  const c = new MemoryReplayCache();
  t.equal(await c.first('a', 60_000), true);
  t.equal(await c.first('a', 60_000), false);
  t.equal(await c.first('b', 0), true);
  t.equal(await c.first('b', 0), true, 'kept for no time');
});
